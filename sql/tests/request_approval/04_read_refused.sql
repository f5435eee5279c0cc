-- request_approval: a read is never held for approval: TQ004, nothing
-- written (the read has no calls row; the checkpoint lists it).  A call
-- recorded as a read but marked as a write (mark_in_doubt) has a row and
-- can be held.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('r1', 'read'), tiq_test.call('r2', 'read'))
);
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.request_approval(tiq_test.rid(1), 1, 1, 'r1')$$,
    'TQ004', 'call r1 is a read; reads are not held for approval', 'a read is refused'
);
select is(
    (select count(*) from ticketiq.approval_requests as a where a.run_id = tiq_test.rid(1)), 0::bigint,
    'the read records no request'
);
select is(tiq_test.call_rows(tiq_test.rid(1), 1), array[]::text[], 'and gets no calls row');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written (I15)');

select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'r2', 'write');
select is(
    (select r.state from ticketiq.request_approval(tiq_test.rid(1), 1, 1, 'r2') as r), 'waiting',
    'a read marked as a write is held'
);
select is(
    (select c.approval_id from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.call_id = 'r2'),
    tiq_test.approval_id(tiq_test.rid(1), 'r2'),
    'its request is recorded on its row'
);

select * from finish();
rollback;
