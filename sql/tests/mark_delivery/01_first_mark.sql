-- mark_delivery: the first mark records when the delivery of the sealed
-- answer starts (already_started = false); the hand-on still follows.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.seal_answer(tiq_test.rid(1), 1, 1, '{"text": "Done."}', 's', 'k1', 600);
select tiq_test.advance(1);

select results_eq(
    $$select m.delivery_started_at, m.already_started from ticketiq.mark_delivery(tiq_test.rid(1), 1) as m$$,
    $$values ('2030-01-01 00:00:01+00'::timestamptz, false)$$,
    'the first mark: now, not started before'
);
select results_eq(
    $$select a.delivery_started_at, a.handed_on_at from ticketiq.answers as a where a.run_id = tiq_test.rid(1)$$,
    $$values ('2030-01-01 00:00:01+00'::timestamptz, null::timestamptz)$$,
    'stored on the answer, not handed on yet'
);
select is(
    (select r.status from ticketiq.runs as r where r.run_id = tiq_test.rid(1)), 'running',
    'the run still holds its lease'
);
select lives_ok($$select ticketiq.hand_on_answer(tiq_test.rid(1), 1)$$, 'the hand-on follows');

select * from finish();
rollback;
