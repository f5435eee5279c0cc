-- send_signal: a workflow that declares its signals refuses another name
-- (TQ014, nothing stored); by its first checkpoint's version, or before it
-- by the versions of its entry kind; an undeclared version takes any name.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.register_process('p1', 'h', 1);
select ticketiq.declare_workflows('p1', $$[
    {"name": "flow", "version": "1", "kind": "flow", "runs": ["1"], "signals": ["go"]}
]$$);
select tiq_test.workflow_run(tiq_test.rid(1), 'flow', '1');
select tiq_test.save_fingerprint();
select throws_ok(
    $$select * from ticketiq.send_signal(tiq_test.rid(1), 'stop', '{}', 'k-1')$$,
    'TQ014', 'run 00000000-0000-0000-0000-000000000001 (workflow flow version 1) waits for no signal stop',
    'a name the version does not wait for'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing stored');
select results_eq(
    $$select s.created from ticketiq.send_signal(tiq_test.rid(1), 'go', '{}', 'k-2') as s$$,
    $$values (true)$$, 'the declared name is stored'
);
-- before its first checkpoint: the versions of its entry kind
select ticketiq.start_run(
    p_holder => 'p1', p_owner => 'o', p_run_as => 'workflow', p_channel => 'web', p_entry_point => 'flow',
    p_may_wait => false, p_ttl_seconds => 8, p_input => '{}', p_correlation_id => null,
    p_idempotency_key => null, p_meta => '{}', p_run_id => tiq_test.rid(2), p_parent_run_id => null);
select throws_ok(
    $$select * from ticketiq.send_signal(tiq_test.rid(2), 'stop', '{}', 'k-3')$$,
    'TQ014', null, 'before its first step: by its entry kind''s versions'
);
select tiq_test.workflow_run(tiq_test.rid(3), 'flow', '9');
select results_eq(
    $$select s.created from ticketiq.send_signal(tiq_test.rid(3), 'anything', '{}', 'k-4') as s$$,
    $$values (true)$$, 'a version nobody declared takes any name'
);
select tiq_test.new_run('p1', 8, tiq_test.rid(4));
select results_eq(
    $$select s.created from ticketiq.send_signal(tiq_test.rid(4), 'anything', '{}', 'k-5') as s$$,
    $$values (true)$$, 'an agent run of an undeclared kind: as before'
);

select * from finish();
rollback;
