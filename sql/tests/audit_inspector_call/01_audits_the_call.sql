-- audit_inspector_call: one inspector.call row with who, the run, the tool,
-- the arguments' digest, the key and the outcome; 'sent' writes
-- inspector.call_sent; the run itself is not changed.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
create temporary table run_before as select r.* from ticketiq.runs as r where r.run_id = tiq_test.rid(1);

select ok(
    ticketiq.audit_inspector_call(
        'alice@example.com', tiq_test.rid(1), 'tickets.comment', repeat('a', 64), 'tiq1-adhoc-1', 'sent'
    ) > 0,
    'returns the audit id'
);
select ticketiq.audit_inspector_call(
    'alice@example.com', tiq_test.rid(1), 'tickets.comment', repeat('a', 64), 'tiq1-adhoc-1', 'made',
    '{"note": "x"}'
);
select results_eq(
    $$select a.event, a.actor, a.run_id, a.epoch, a.detail
      from ticketiq.audit as a where a.event like 'inspector.%' order by a.audit_id$$,
    $$values
      ('inspector.call_sent'::text, 'alice@example.com'::text, tiq_test.rid(1), null::bigint,
       jsonb_build_object('tool', 'tickets.comment', 'arguments_digest', repeat('a', 64),
                          'key', 'tiq1-adhoc-1', 'outcome', 'sent')),
      ('inspector.call'::text, 'alice@example.com'::text, tiq_test.rid(1), null::bigint,
       jsonb_build_object('note', 'x', 'tool', 'tickets.comment', 'arguments_digest', repeat('a', 64),
                          'key', 'tiq1-adhoc-1', 'outcome', 'made'))$$,
    'the call sent, then its outcome'
);
select is(
    (select count(*)::integer from (
        select r.* from ticketiq.runs as r where r.run_id = tiq_test.rid(1)
        except
        select b.* from run_before as b) as changed),
    0,
    'the run is unchanged'
);
select ok(
    ticketiq.audit_inspector_call('bob', null, 'tickets.get', repeat('0', 64), 'tiq1-adhoc-2', 'refused') > 0,
    'a call from no run''s page has no run'
);

select * from finish();
rollback;
