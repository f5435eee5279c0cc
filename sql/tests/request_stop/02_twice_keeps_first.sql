-- request_stop: asking twice keeps the first request.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.request_stop(tiq_test.rid(1), 'alice@example.com', 'first');
select tiq_test.advance(2);
select tiq_test.save_fingerprint();

select is(
    (select s.stop_requested_at from ticketiq.request_stop(tiq_test.rid(1), 'bob@example.com', 'second') as s),
    '2030-01-01 00:00:00+00'::timestamptz,
    'the second request returns the first time'
);
select is(
    (select r.stop_requested_by from ticketiq.runs as r where r.run_id = tiq_test.rid(1)), 'alice@example.com',
    'the first actor is kept'
);
select is(
    (
        select count(*) from ticketiq.audit as a
        where a.run_id = tiq_test.rid(1) and a.event = 'agent.run.stop_requested'
    ),
    1::bigint,
    'audited once'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'the second request changed nothing');

select * from finish();
rollback;
