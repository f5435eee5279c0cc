-- roles: ticketiq_app has no table privilege: every INSERT, UPDATE, DELETE
-- and SELECT on a ticketiq table fails with 42501, so every state change
-- goes through the fenced functions.
begin;
select plan(60);

set local role ticketiq_app;

select throws_ok(
    format('insert into ticketiq.%I default values', t.name), '42501', null, 'app cannot INSERT into ' || t.name
)
from unnest(array[
    'answers', 'approval_requests', 'audit', 'calls', 'checkpoints', 'config', 'cron_schedules', 'entries',
    'leader_leases', 'processes', 'runs', 'schema_migrations', 'transcript_entries', 'attempts', 'audit_once_keys'
]) as t (name);

select throws_ok(
    format('update ticketiq.%I set %I = %I', t.name, t.col, t.col), '42501', null, 'app cannot UPDATE ' || t.name
)
from (values
    ('answers', 'body'), ('approval_requests', 'state'), ('audit', 'event'), ('calls', 'state'),
    ('checkpoints', 'body'), ('config', 'fake_clock_allowed'), ('cron_schedules', 'next_fire_at'),
    ('entries', 'state'), ('leader_leases', 'expires_at'),
    ('processes', 'last_seen_at'), ('runs', 'epoch'), ('schema_migrations', 'name'), ('transcript_entries', 'body'),
    ('attempts', 'attempts'), ('audit_once_keys', 'audit_id')
) as t (name, col);

select throws_ok(format('delete from ticketiq.%I', t.name), '42501', null, 'app cannot DELETE from ' || t.name)
from unnest(array[
    'answers', 'approval_requests', 'audit', 'calls', 'checkpoints', 'config', 'cron_schedules', 'entries',
    'leader_leases', 'processes', 'runs', 'schema_migrations', 'transcript_entries', 'attempts', 'audit_once_keys'
]) as t (name);

select throws_ok(format('select * from ticketiq.%I', t.name), '42501', null, 'app cannot SELECT from ' || t.name)
from unnest(array[
    'answers', 'approval_requests', 'audit', 'calls', 'checkpoints', 'config', 'cron_schedules', 'entries',
    'leader_leases', 'processes', 'runs', 'schema_migrations', 'transcript_entries', 'attempts', 'audit_once_keys'
]) as t (name);

reset role;

select * from finish();
rollback;
