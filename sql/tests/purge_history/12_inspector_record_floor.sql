-- purge_history: the record of a person's ad hoc calls (inspector.* audit
-- rows) is kept 90 days at least, whatever age the caller asks for, with or
-- without the run whose page the call came from; past the floor it goes like
-- any old row (issue 46, finding 6).
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.fail_run(tiq_test.rid(1), 1, 'gave up');
select ticketiq.audit_inspector_call(
    'ops@example.com', tiq_test.rid(1), 'crm.read', repeat('a', 64), 'key-1', 'made'
);
select ticketiq.audit_inspector_call(
    'ops@example.com', null, 'crm.update', repeat('b', 64), 'key-2', 'sent'
);
select tiq_test.advance(1);

select lives_ok($$select ticketiq.purge_history(0.001)$$, 'a purge asked for a tiny age');
select is((select count(*)::integer from ticketiq.runs), 0, 'the run went');
select is(
    (select count(*)::integer from ticketiq.audit as a where a.event like 'inspector.%'), 2,
    'both inspector rows stay: the one of the run''s page and the one of no run'
);
select tiq_test.advance(90 * 86400);
select lives_ok($$select ticketiq.purge_history(0.001)$$, 'a purge 90 days later');
select is(
    (select count(*)::integer from ticketiq.audit as a where a.event like 'inspector.%'), 0,
    'past the floor they go'
);

select * from finish();
rollback;
