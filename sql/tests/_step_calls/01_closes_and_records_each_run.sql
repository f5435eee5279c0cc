-- _step_calls: for each checkpoint of the arrays (step s of its run), the
-- changing calls of step s - 1 are closed (in doubt: done, made, outcome
-- from body.outcomes; never marked: settled, skipped) and one row is
-- recorded per changing call of step s, reads left out; each run's own
-- body and epoch, whatever the other runs in the call.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.new_run('p1', 8, tiq_test.rid(2));
select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write'), tiq_test.call('w2', 'write'))
);
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w1');
select tiq_test.advance(1);
-- The checkpoints the calls rows hang off (written by write_checkpoint(s) in use).
insert into ticketiq.checkpoints (run_id, step, epoch, body, seal, seal_key_id, written_at)
values (tiq_test.rid(1), 2, 1, '{}', 's', 'k', ticketiq.now()),
(tiq_test.rid(2), 1, 1, '{}', 's', 'k', ticketiq.now());

select ticketiq._step_calls(
    array[tiq_test.rid(1), tiq_test.rid(2)],
    array[1, 1]::bigint[],
    array[2, 1],
    jsonb_build_array(
        tiq_test.body(jsonb_build_array(tiq_test.call('n1', 'read'), tiq_test.call('n2', 'delegation', 'key-n2')))
        || '{"outcomes": {"w1": {"id": "JIRA-1"}}}',
        tiq_test.body(jsonb_build_array(tiq_test.call('m1', 'write')))
    ),
    ticketiq.now()
);

select results_eq(
    $$select c.call_id, c.state, c.settlement, c.outcome, c.finished_epoch, c.finished_at
      from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.step = 1 order by c.ordinal$$,
    $$values ('w1'::text, 'done'::text, 'made'::text, '{"id": "JIRA-1"}'::jsonb, 1::bigint,
        '2030-01-01 00:00:01+00'::timestamptz),
        ('w2', 'settled', 'skipped', null, 1, '2030-01-01 00:00:01+00')$$,
    'step 1 of run 1: the in-doubt write made with its outcome, the unmarked one skipped'
);
select results_eq(
    $$select c.call_id, c.ordinal, c.classification, c.step_key, c.state
      from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.step = 2$$,
    $$values ('n2'::text, 2, 'delegation'::text, 'key-n2'::text, 'pending'::text)$$,
    'step 2 of run 1: its delegation recorded at its place in the body; its read n1 has no row'
);
select results_eq(
    $$select c.call_id, c.ordinal, c.state from ticketiq.calls as c where c.run_id = tiq_test.rid(2)$$,
    $$values ('m1'::text, 1, 'pending'::text)$$,
    'run 2: its own step 1 call recorded'
);
select lives_ok(
    $$select ticketiq._step_calls('{}'::uuid[], '{}'::bigint[], '{}'::integer[], '[]', ticketiq.now())$$,
    'no checkpoints: nothing to do'
);

select * from finish();
rollback;
