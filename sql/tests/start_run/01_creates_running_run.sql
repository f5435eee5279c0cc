-- start_run: a new run is running at epoch 1 and its holder holds the lease
-- checkpoint:<run id> for the TTL from now by the database clock.
begin;
select plan(16);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');

create temp table started on commit drop as
select s.*
from ticketiq.start_run(
    'p1', 'owner@example.com', 'agent:triage', 'teams', 'teams_turn', true, 8,
    '{"text": "hi"}'::jsonb, null, null, '{"tenant": "t1"}'::jsonb, tiq_test.rid(1)
) as s;

select is((select s.run_id from started as s), tiq_test.rid(1), 'returns the run id');
select is((select s.created from started as s), true, 'created is true');
select is((select s.epoch from started as s), 1::bigint, 'returns epoch 1');
select is(
    (select s.lease_expires_at from started as s), '2030-01-01 00:00:08+00'::timestamptz,
    'the lease expires TTL seconds from now by the database clock'
);
select is(
    (select s.correlation_id from started as s), tiq_test.rid(1)::text,
    'correlation id defaults to the run id'
);

select is(
    (select r.status::text from ticketiq.runs as r where r.run_id = tiq_test.rid(1)), 'running',
    'run is running'
);
select is(
    (select r.epoch::bigint from ticketiq.runs as r where r.run_id = tiq_test.rid(1)), 1::bigint,
    'run is at epoch 1'
);
select is((select r.lease_holder from ticketiq.runs as r where r.run_id = tiq_test.rid(1)), 'p1', 'p1 holds the lease');
select is(
    (select r.lease_expires_at from ticketiq.runs as r where r.run_id = tiq_test.rid(1)),
    '2030-01-01 00:00:08+00'::timestamptz,
    'lease expiry stored on the run'
);
select is(
    (select (r.loss_count::integer, r.last_step::integer) from ticketiq.runs as r where r.run_id = tiq_test.rid(1)),
    row(0, 0),
    'no loss and no step yet'
);
select is(
    (
        select (r.owner::text, r.run_as::text, r.channel::text, r.entry_point::text, r.may_wait, r.input, r.meta::jsonb)
        from ticketiq.runs as r where r.run_id = tiq_test.rid(1)
    ),
    row(
        'owner@example.com'::text, 'agent:triage'::text, 'teams'::text, 'teams_turn'::text, true,
        '{"text": "hi"}'::jsonb, '{"tenant": "t1"}'::jsonb
    ),
    'owner, run_as, channel, entry point, may_wait, input and meta stored'
);
select is(
    (select r.finished_at from ticketiq.runs as r where r.run_id = tiq_test.rid(1)), null,
    'not finished'
);
select is(
    (select rf.lease_name from ticketiq.runs_in_flight as rf where rf.run_id = tiq_test.rid(1)),
    'checkpoint:' || tiq_test.rid(1)::text,
    'runs_in_flight names the lease checkpoint:<run id>'
);
select results_eq(
    $$select a.event, a.epoch, a.actor, a.detail ->> 'entry_point'
      from ticketiq.audit as a where a.run_id = tiq_test.rid(1)$$,
    $$values ('agent.run.started'::text, 1::bigint, 'p1'::text, 'teams_turn'::text)$$,
    'one agent.run.started audit row at epoch 1 by the holder'
);

select is(
    (
        select s.correlation_id
        from ticketiq.start_run(
            'p1', 'o', 'ra', 'web', 'cron', false, 8, '{}'::jsonb, 'corr-7', null, '{}'::jsonb, tiq_test.rid(2)
        ) as s
    ),
    'corr-7',
    'an explicit correlation id is kept'
);
select is(
    (select r.correlation_id::text from ticketiq.runs as r where r.run_id = tiq_test.rid(2)), 'corr-7',
    'and stored'
);

select * from finish();
rollback;
