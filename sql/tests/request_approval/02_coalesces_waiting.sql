-- request_approval: filing again while the request waits coalesces with it:
-- the same approval id, coalesced = true, no second request and no second
-- audit row; the first summary is kept.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write')));
select ticketiq.request_approval(tiq_test.rid(1), 1, 1, 'w1', '{"title": "first"}');
select tiq_test.advance(3);
select tiq_test.save_fingerprint();

create temp table again on commit drop as
select r.* from ticketiq.request_approval(tiq_test.rid(1), 1, 1, 'w1', '{"title": "second"}') as r;

select is(
    (select a.approval_id from again as a), tiq_test.approval_id(tiq_test.rid(1), 'w1'),
    'the same approval id'
);
select is(
    (select (a.state, a.coalesced, a.decided_by) from again as a), row('waiting'::text, true, null::text),
    'still waiting, coalesced = true'
);
select is(
    (select a.summary from ticketiq.approval_requests as a), '{"title": "first"}'::jsonb,
    'the first summary is kept'
);
select is(
    (select count(*) from ticketiq.audit as a where a.event = 'approval.requested'), 1::bigint,
    'one approval.requested audit row'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'filing again changed nothing');

select * from finish();
rollback;
