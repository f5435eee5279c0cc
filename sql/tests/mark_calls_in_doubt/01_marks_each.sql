-- mark_calls_in_doubt: the changing calls a step makes at once are marked in
-- doubt in one statement, each as mark_in_doubt marks one, in the order
-- given, with its seal (I5, I7).
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(
    tiq_test.call('w1', 'write', 'key-1'), tiq_test.call('r1', 'read'),
    tiq_test.call('w2', 'write', 'key-2')));
select tiq_test.advance(1);

select results_eq(
    $$select m.call_id, m.state, m.marked_classification, m.step_key, m.already_marked,
          m.stop_requested
      from ticketiq.mark_calls_in_doubt(tiq_test.rid(1), 1, 1, '[
          {"call_id": "w2", "seal": "s2", "seal_key_id": "k1"},
          {"call_id": "r1", "classification": "write", "seal": "s3", "seal_key_id": "k1"},
          {"call_id": "w1", "classification": null, "seal": "s1", "seal_key_id": "k1"}]') as m$$,
    $$values ('w2'::text, 'in_doubt'::text, 'write'::text, 'key-2'::text, false, false),
             ('r1', 'in_doubt', 'write', null, false, false),
             ('w1', 'in_doubt', 'write', 'key-1', false, false)$$,
    'one row a call, in the order given'
);
select results_eq(
    $$select c.call_id, c.state, c.marked_epoch, c.marked_at, c.seal
      from ticketiq.calls as c where c.run_id = tiq_test.rid(1) order by c.ordinal$$,
    $$values ('w1'::text, 'in_doubt'::text, 1::bigint, '2030-01-01 00:00:01+00'::timestamptz, 's1'::text),
             ('r1', 'in_doubt', 1, '2030-01-01 00:00:01+00', 's3'),
             ('w2', 'in_doubt', 1, '2030-01-01 00:00:01+00', 's2')$$,
    'each row in doubt with its own seal; the read that is a write by now gets its row'
);
select results_eq(
    $$select m.call_id, m.already_marked
      from ticketiq.mark_calls_in_doubt(tiq_test.rid(1), 1, 1,
          '[{"call_id": "w1", "seal": "other"}, {"call_id": "w2"}]') as m$$,
    $$values ('w1'::text, true), ('w2', true)$$,
    'marked again: the first marks, nothing changed'
);
select is(
    (select c.seal from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.call_id = 'w1'),
    's1', 'a mark again keeps the first seal'
);

select * from finish();
rollback;
