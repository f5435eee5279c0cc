-- fork_run: one statement writes a claimed run whose checkpoints 1 to the
-- step are those given (sealed for it), the last step's changing calls as
-- pending rows with their seals, meta.forked_from; audited on both runs;
-- adopt_run then takes it from that step.
begin;
select plan(9);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write', 'src-1')));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 2, jsonb_build_array(tiq_test.call('w2', 'write', 'src-2')));

create temporary table forked as
select f.* from ticketiq.fork_run(
    tiq_test.rid(1), 2, tiq_test.rid(7), 'alice', 'try another way', '{"ticket": 43}', 'fork:k1',
    jsonb_build_array(
        jsonb_build_object('step', 1, 'body', tiq_test.body(jsonb_build_array(tiq_test.call('w1', 'write', 'src-1'))),
            'seal', 'f1', 'seal_key_id', 'k1'),
        jsonb_build_object('step', 2, 'body', tiq_test.body(jsonb_build_array(tiq_test.call('w2', 'write', 'fork-2')))
            || '{"call_seals": {"w2": "pending-seal"}}', 'seal', 'f2', 'seal_key_id', 'k1')
    ),
    'seal-2'
) as f;

select results_eq(
    $$select f.run_id, f.created, f.status, f.step, f.source_run_id from forked as f$$,
    $$values (tiq_test.rid(7), true, 'claimed'::text, 2, tiq_test.rid(1))$$,
    'the fork, claimed at the step'
);
select results_eq(
    $$select r.owner::text, r.entry_point::text, r.correlation_id::text, r.input, r.last_step::integer,
        r.claim_reason, r.meta -> 'forked_from'
      from ticketiq.runs as r where r.run_id = tiq_test.rid(7)$$,
    $$values ('owner@example.com'::text, 'playground'::text, tiq_test.rid(7)::text, '{"ticket": 43}'::jsonb, 2,
        'forked'::text, jsonb_build_object('run_id', tiq_test.rid(1), 'step', 2))$$,
    'the source''s owner and kind, its own correlation id, the input given, forked_from'
);
select results_eq(
    $$select c.step::integer, c.seal::text, c.body ? 'call_seals' from ticketiq.checkpoints as c
      where c.run_id = tiq_test.rid(7) order by c.step$$,
    $$values (1, 'f1'::text, false), (2, 'f2'::text, false)$$,
    'the checkpoints given, sealed for the fork (call_seals not stored)'
);
select results_eq(
    $$select c.step, c.call_id, c.state, c.step_key, c.seal from ticketiq.calls as c where c.run_id = tiq_test.rid(7)$$,
    $$values (2, 'w2'::text, 'pending'::text, 'fork-2'::text, 'pending-seal'::text)$$,
    'the last step''s write is pending under the fork''s key; the earlier one is history'
);
select is(
    (select count(*) from ticketiq.audit as a
     where (a.run_id = tiq_test.rid(7) and a.event = 'agent.run.forked' and a.actor = 'alice')
        or (
            a.run_id = tiq_test.rid(1) and a.event = 'agent.run.fork_made'
            and a.detail ->> 'fork_run_id' = tiq_test.rid(7)::text
        )),
    2::bigint, 'audited on the fork and on the source'
);
select results_eq(
    $$select e.kind, e.step, e.body -> 'forked_from' ->> 'step' from ticketiq.run_events as e
      where e.run_id = tiq_test.rid(7)$$,
    $$values ('started'::text, 2, '2'::text)$$,
    'its event stream starts at the step, naming the source'
);
select results_eq(
    $$select f.run_id, f.created from ticketiq.fork_run(
        tiq_test.rid(1), 2, tiq_test.rid(8), 'alice', null, null, 'fork:k1',
        jsonb_build_array(
            jsonb_build_object('step', 1, 'body', tiq_test.body(), 'seal', 'f1', 'seal_key_id', 'k1'),
            jsonb_build_object('step', 2, 'body', tiq_test.body(), 'seal', 'f2', 'seal_key_id', 'k1')),
        'seal-2') as f$$,
    $$values (tiq_test.rid(7), false)$$,
    'the same key again finds the fork'
);
select results_eq(
    $$select a.epoch, a.last_step, a.checkpoint_seal, a.calls -> 0 ->> 'state'
      from ticketiq.adopt_run('p2', 8, tiq_test.rid(7)) as a$$,
    $$values (2::bigint, 2, 'f2'::text, 'pending'::text)$$,
    'adopt_run takes the fork from its step'
);
select is((select r.status::text from ticketiq.runs as r where r.run_id = tiq_test.rid(1)), 'running',
    'the source runs on, untouched');

select * from finish();
rollback;
