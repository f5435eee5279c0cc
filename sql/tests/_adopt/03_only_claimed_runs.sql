-- _adopt: a run given that is not claimed (running, or unknown) is left as
-- it is and not returned; nothing given, nothing adopted.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 1, tiq_test.rid(1));
select tiq_test.lose(tiq_test.rid(1));
select tiq_test.new_run('p1', 60, tiq_test.rid(2));

select is(
    array(select a.run_id from ticketiq._adopt('w1', interval '8 seconds',
        array[tiq_test.rid(2), tiq_test.rid(1), tiq_test.rid(9)]) as a),
    array[tiq_test.rid(1)], 'the claimed run alone'
);
select results_eq(
    $$select r.lease_holder, r.epoch::bigint from ticketiq.runs as r where r.run_id = tiq_test.rid(2)$$,
    $$values ('p1'::text, 1::bigint)$$, 'the running run still p1''s, at its epoch'
);
select is_empty(
    $$select 1 from ticketiq._adopt('w1', interval '8 seconds', array[]::uuid[])$$,
    'nothing given: nothing adopted'
);

select * from finish();
rollback;
