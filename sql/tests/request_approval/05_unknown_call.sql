-- request_approval: a call the step does not have raises TQ008 unknown_call
-- (an unknown call id, or a known call id under another step, a read's
-- included: it is not taken for a read of that step); nothing written.  A
-- null call id is malformed: TQ004 (schema 10).
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write'), tiq_test.call('r1', 'read'))
);
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.request_approval(tiq_test.rid(1), 1, 1, 'nope')$$,
    'TQ008', null, 'unknown call id'
);
select throws_ok(
    $$select ticketiq.request_approval(tiq_test.rid(1), 1, 2, 'w1')$$,
    'TQ008', null, 'the call id under a step that has no such call'
);
select throws_ok(
    $$select ticketiq.request_approval(tiq_test.rid(1), 1, 2, 'r1')$$,
    'TQ008', null, 'a read''s call id under a step that has no such call'
);
select throws_ok(
    $$select ticketiq.request_approval(tiq_test.rid(1), 1, 1, null)$$,
    'TQ004', 'call_id must be 1 to 256 characters, got null', 'a null call id'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written (I15)');

select * from finish();
rollback;
