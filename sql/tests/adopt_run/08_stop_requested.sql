-- adopt_run: a Stop asked while the run was lost is reported to the adopter,
-- which stops the run (ticketiq.stop_run) instead of going on.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.lose(tiq_test.rid(1));
select ticketiq.request_stop(tiq_test.rid(1), 'alice@example.com', 'not needed');

create temp table adopted on commit drop as
select a.* from ticketiq.adopt_run('p2', 8, tiq_test.rid(1)) as a;

select is((select a.stop_requested from adopted as a), true, 'stop_requested is true');
select is(
    (select s.status from ticketiq.stop_run(tiq_test.rid(1), (select a.epoch from adopted as a)) as s), 'stopped',
    'the adopter stops the run at its epoch'
);
select is(
    (
        select a.detail ->> 'requested_by' from ticketiq.audit as a
        where a.run_id = tiq_test.rid(1) and a.event = 'agent.run.stopped'
    ),
    'alice@example.com',
    'the stop is audited with who asked for it'
);

select * from finish();
rollback;
