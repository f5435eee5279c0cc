-- record_resume: malformed settlements raise TQ004 and record nothing.
begin;
select plan(8);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write')));
select tiq_test.take_over(tiq_test.rid(1), 'p2');
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.record_resume(tiq_test.rid(1), 3, '{"w1": "unknown"}')$$, 'TQ004', null, 'not an array'
);
select throws_ok($$select ticketiq.record_resume(tiq_test.rid(1), 3, null)$$, 'TQ004', null, 'null');
select throws_ok(
    $$select ticketiq.record_resume(tiq_test.rid(1), 3, '["w1"]')$$, 'TQ004', null, 'an element not an object'
);
select throws_ok(
    $$select ticketiq.record_resume(tiq_test.rid(1), 3, '[{"settlement": "unknown"}]')$$, 'TQ004', null,
    'no call_id'
);
select throws_ok(
    $$select ticketiq.record_resume(tiq_test.rid(1), 3, '[{"call_id": 1, "settlement": "unknown"}]')$$,
    'TQ004', null, 'a call_id that is not a string'
);
select throws_ok(
    $$select ticketiq.record_resume(tiq_test.rid(1), 3, '[{"call_id": "w1"}]')$$, 'TQ004', null,
    'no settlement'
);
select throws_ok(
    $$select ticketiq.record_resume(tiq_test.rid(1), 3, '[{"call_id": "w1", "settlement": "resent"}]')$$,
    'TQ004', null, 'an unknown settlement'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing recorded');

select * from finish();
rollback;
