-- write_checkpoint: step 1 is written with its seal and one calls row per
-- changing call; a read gets no row (the checkpoint body lists every call).
-- The run's last_step moves on; its updated_at is left alone.
begin;
select plan(13);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.advance(1);

create temp table written on commit drop as
select w.*
from ticketiq.write_checkpoint(
    tiq_test.rid(1), 1, 1,
    tiq_test.body(jsonb_build_array(
        tiq_test.call('c1', 'read'),
        tiq_test.call('c2', 'write', 'key-2'),
        tiq_test.call('c3', 'delegation')
    )),
    'seal-1', 'k1'
) as w;

select is((select w.step from written as w), 1, 'returns step 1');
select is((select w.replayed from written as w), false, 'not a replay');
select is((select w.stop_requested from written as w), false, 'no stop requested');
select is(
    (select w.written_at from written as w), '2030-01-01 00:00:01+00'::timestamptz,
    'written_at is the database clock'
);
select is(
    (select w.lease_expires_at from written as w), '2030-01-01 00:00:08+00'::timestamptz,
    'returns the lease expiry'
);
select results_eq(
    $$select c.step::integer, c.epoch, c.seal::text, c.seal_key_id::text, c.body = tiq_test.body(jsonb_build_array(
          tiq_test.call('c1', 'read'), tiq_test.call('c2', 'write', 'key-2'), tiq_test.call('c3', 'delegation')))
      from ticketiq.checkpoints as c where c.run_id = tiq_test.rid(1)$$,
    $$values (1, 1::bigint, 'seal-1'::text, 'k1'::text, true)$$,
    'one checkpoint row with epoch, seal, key and the body as given'
);
select results_eq(
    $$select c.call_id, c.ordinal, c.tool, c.classification, c.step_key, c.state
      from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.step = 1 order by c.ordinal$$,
    $$values ('c2'::text, 2, 'tool_write'::text, 'write'::text, 'key-2'::text, 'pending'::text),
             ('c3', 3, 'tool_delegation', 'delegation', null, 'pending')$$,
    'one pending calls row per changing call, with its ordinal in the step, tool, classification and step key'
);
select is(
    (select count(*) from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.call_id = 'c1'), 0::bigint,
    'the read c1 gets no row (it is listed in the checkpoint body)'
);
select is(
    (select c.arguments from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.call_id = 'c2'),
    '{"for": "c2"}'::jsonb,
    'arguments stored'
);
select is(
    (
        select count(*) from ticketiq.calls as c
        where c.run_id = tiq_test.rid(1) and (c.marked_at is not null or c.finished_at is not null)
    ),
    0::bigint,
    'no call is marked or finished yet'
);
select is((select r.last_step::integer from ticketiq.runs as r where r.run_id = tiq_test.rid(1)), 1, 'last_step is 1');
select is(
    (select r.updated_at from ticketiq.runs as r where r.run_id = tiq_test.rid(1)),
    '2030-01-01 00:00:00+00'::timestamptz,
    'run updated_at is left as start_run set it'
);
select is(
    tiq_test.checkpoint(tiq_test.rid(1), 1, 2),
    '2030-01-01 00:00:01+00'::timestamptz,
    'step 2 follows with no calls'
);

select * from finish();
rollback;
