-- mark_in_doubt: a read is never marked in doubt (TQ004).
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('r1', 'read')));
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'r1')$$,
    'TQ004', null, 'a read-classified call is refused'
);
select throws_ok(
    $$select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'r1', 'read')$$,
    'TQ004', null, 'also when the tool is still a read now'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');
select is(
    (select c.state from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.call_id = 'r1'), 'pending',
    'the read stays pending'
);

select * from finish();
rollback;
