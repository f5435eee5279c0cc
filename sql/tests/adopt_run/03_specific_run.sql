-- adopt_run: with p_run_id it adopts that run; without, the oldest claimed.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.lose(tiq_test.rid(1));
select tiq_test.new_run('p1', 8, tiq_test.rid(2));
select tiq_test.lose(tiq_test.rid(2));

select is(
    (select a.run_id from ticketiq.adopt_run('p2', 8, tiq_test.rid(2)) as a), tiq_test.rid(2),
    'adopts the run asked for, though another was claimed earlier'
);
select is(
    (select r.status from ticketiq.runs as r where r.run_id = tiq_test.rid(1)), 'claimed',
    'the other run is still claimed'
);
select is_empty(
    $$select 1 from ticketiq.adopt_run('p2', 8, tiq_test.rid(99))$$,
    'an unknown run id: no row'
);
select is(
    (select a.run_id from ticketiq.adopt_run('p3', 8) as a), tiq_test.rid(1),
    'without a run id the remaining claimed run is adopted'
);
select is(
    (select r.lease_holder from ticketiq.runs as r where r.run_id = tiq_test.rid(1)), 'p3',
    'by p3'
);

select * from finish();
rollback;
