-- request_approval: a read is never held for approval: TQ004, nothing written.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('r1', 'read')));
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.request_approval(tiq_test.rid(1), 1, 1, 'r1')$$,
    'TQ004', null, 'a read is refused'
);
select is(
    (select c.approval_id from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.call_id = 'r1'), null,
    'the read records no request'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written (I15)');

select * from finish();
rollback;
