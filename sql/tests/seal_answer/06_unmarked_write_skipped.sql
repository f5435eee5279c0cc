-- seal_answer: sealing closes the last step's calls like the next
-- checkpoint does: a changing call never marked in doubt as settled,
-- skipped; calls marked in doubt (a read marked as a write included) as
-- done, made.  A read never marked has no row to close.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 1,
    jsonb_build_array(
        tiq_test.call('r1', 'read'), tiq_test.call('w1', 'write'), tiq_test.call('w2', 'write'),
        tiq_test.call('r2', 'read')
    )
);
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w2');
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'r2', 'write');
select ticketiq.seal_answer(tiq_test.rid(1), 1, 2, '{"text": "done"}', 'seal-a', 'k1', 60);

select results_eq(
    $$select c.call_id, c.state, c.settlement
      from ticketiq.calls as c where c.run_id = tiq_test.rid(1) order by c.ordinal$$,
    $$values ('w1'::text, 'settled'::text, 'skipped'::text), ('w2', 'done', 'made'), ('r2', 'done', 'made')$$,
    'the unmarked write is skipped; the marked write and the read marked as a write are made'
);
select is(tiq_test.call_rows(tiq_test.rid(1), 1), array['w1', 'w2', 'r2'], 'the unmarked read r1 has no row');

select * from finish();
rollback;
