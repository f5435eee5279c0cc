-- adopt_run: a run lost after its answer was sealed but before it was handed
-- on comes back with the answer, for the adopter to hand on, running
-- nothing (I10).
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('r1', 'read')));
select ticketiq.seal_answer(tiq_test.rid(1), 1, 2, '{"text": "done"}', 'answer-seal', 'k2', 3600);
select tiq_test.lose(tiq_test.rid(1));

create temp table adopted on commit drop as
select a.* from ticketiq.adopt_run('p2', 8, tiq_test.rid(1)) as a;

select is((select a.answer_body from adopted as a), '{"text": "done"}'::jsonb, 'the sealed answer');
select is(
    (select (a.answer_seal, a.answer_seal_key_id) from adopted as a), row('answer-seal'::text, 'k2'::text),
    'with its seal and key id'
);
select is((select a.answer_handed_on from adopted as a), false, 'not handed on yet');
select is((select a.last_step from adopted as a), 2, 'last step is the answer''s step');
select is(
    (
        select h.body from ticketiq.hand_on_answer(tiq_test.rid(1), (select a.epoch from adopted as a)) as h
    ),
    '{"text": "done"}'::jsonb,
    'the adopter hands the answer on at its epoch'
);
select is(
    (select r.status from ticketiq.runs as r where r.run_id = tiq_test.rid(1)), 'completed',
    'and the run is completed, no step run again'
);

select * from finish();
rollback;
