-- get_answer: a run's sealed answer with its seal and key id, when it was
-- sealed and until when it is kept, then by which epoch and when it was
-- handed on; no row for a run without one; reading changes nothing.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1);
select ticketiq.seal_answer(tiq_test.rid(1), 1, 2, '{"text": "found"}', 'seal-1', 'k1', 600);
select tiq_test.new_run('p1', 8, tiq_test.rid(2));
select tiq_test.save_fingerprint();

select results_eq(
    $$select g.run_id, g.step, g.epoch, g.body, g.seal, g.seal_key_id, g.sealed_at, g.retain_until,
             g.handed_on_at, g.handed_on_epoch
      from ticketiq.get_answer(tiq_test.rid(1)) as g$$,
    $$values (tiq_test.rid(1), 2, 1::bigint, '{"text": "found"}'::jsonb, 'seal-1'::text, 'k1'::text,
              '2030-01-01 00:00:00+00'::timestamptz, '2030-01-01 00:10:00+00'::timestamptz,
              null::timestamptz, null::bigint)$$,
    'a sealed answer: step 2, its seal, not handed on yet'
);
select is_empty(
    $$select 1 from ticketiq.get_answer(tiq_test.rid(2))$$, 'no row for a run without an answer'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'reading changed nothing');

select tiq_test.use_fake_clock('2030-01-01 00:00:05+00');
select ticketiq.hand_on_answer(tiq_test.rid(1), 1);
select results_eq(
    $$select g.step, g.seal, g.handed_on_at, g.handed_on_epoch
      from ticketiq.get_answer(tiq_test.rid(1)) as g$$,
    $$values (2, 'seal-1'::text, '2030-01-01 00:00:05+00'::timestamptz, 1::bigint)$$,
    'handed on: when, and by epoch 1'
);

select * from finish();
rollback;
