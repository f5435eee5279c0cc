-- request_approval: a summary that is not a JSON object raises TQ004 and
-- writes nothing: no request, no mark on the call, no audit row (I15).
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write')));
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.request_approval(tiq_test.rid(1), 1, 1, 'w1', '[]')$$,
    'TQ004', null, 'summary an array'
);
select throws_ok(
    $$select ticketiq.request_approval(tiq_test.rid(1), 1, 1, 'w1', '"close it"')$$,
    'TQ004', null, 'summary a string'
);
select throws_ok(
    $$select ticketiq.request_approval(tiq_test.rid(1), 1, 1, 'w1', null)$$,
    'TQ004', null, 'summary null'
);
select is(
    (select count(*) from ticketiq.approval_requests), 0::bigint, 'no request filed'
);
select is(
    (select c.approval_id from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.call_id = 'w1'), null,
    'the call records no request'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written (I15)');

select * from finish();
rollback;
