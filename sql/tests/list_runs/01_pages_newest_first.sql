-- list_runs: runs newest first, a page at a time by the keyset cursor; every
-- run once across the pages, none twice.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.advance(1);
select tiq_test.new_run('p1', 8, tiq_test.rid(2));
select tiq_test.advance(1);
select tiq_test.new_run('p1', 8, tiq_test.rid(3));

select results_eq(
    $$select l.run_id from ticketiq.list_runs(p_limit => 2) as l$$,
    $$values (tiq_test.rid(3)), (tiq_test.rid(2))$$,
    'the first page: the newest two'
);
select results_eq(
    $$select l.run_id from ticketiq.list_runs(
        p_after_created => '2030-01-01 00:00:01+00', p_after_run_id => tiq_test.rid(2), p_limit => 2) as l$$,
    $$values (tiq_test.rid(1))$$,
    'the page after the cursor: the rest'
);
select results_eq(
    $$select l.owner, l.kind, l.status, l.loss_count, l.last_step, l.forked_from
      from ticketiq.list_runs(p_limit => 1) as l$$,
    $$values ('owner@example.com'::text, 'playground'::text, 'running'::text, 0, 0, null::uuid)$$,
    'each row says the owner, kind, status, losses, last step'
);
select is(
    (select count(*) from ticketiq.list_runs(p_owner => 'someone@else')), 0::bigint,
    'another owner sees none of them'
);

select * from finish();
rollback;
