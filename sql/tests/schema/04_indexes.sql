-- schema: the sweep reads only the partial index of running runs, so its
-- cost does not grow with the finished runs kept; renewal, adoption, the
-- one-resume-per-epoch rule, waiting approvals, child runs, suspended runs,
-- pending entries, due cron schedules and answers past their retention
-- (schema 10) have their indexes too; the list of runs pages by its keyset
-- indexes (schema 23).
begin;
select plan(25);

select has_index('ticketiq', 'runs', 'runs_running_lease_idx', 'lease_expires_at');
select is(
    (
        select pg_get_expr(i.indpred, i.indrelid) from pg_index as i
        where i.indexrelid = 'ticketiq.runs_running_lease_idx'::regclass
    ),
    '((status)::text = ''running''::text)',
    'runs_running_lease_idx holds running runs only'
);
select has_index('ticketiq', 'runs', 'runs_holder_idx', 'lease_holder');
select is(
    (
        select pg_get_expr(i.indpred, i.indrelid) from pg_index as i
        where i.indexrelid = 'ticketiq.runs_holder_idx'::regclass
    ),
    '((status)::text = ''running''::text)',
    'runs_holder_idx holds running runs only'
);
select has_index('ticketiq', 'runs', 'runs_finished_idx', 'finished_at');
select is(
    (
        select pg_get_expr(i.indpred, i.indrelid) from pg_index as i
        where i.indexrelid = 'ticketiq.runs_finished_idx'::regclass
    ),
    '(finished_at IS NOT NULL)',
    'runs_finished_idx holds finished runs only (retention)'
);
select has_index('ticketiq', 'runs', 'runs_claimed_idx', 'updated_at');
select is(
    (
        select pg_get_expr(i.indpred, i.indrelid) from pg_index as i
        where i.indexrelid = 'ticketiq.runs_claimed_idx'::regclass
    ),
    '((status)::text = ''claimed''::text)',
    'runs_claimed_idx holds claimed runs only'
);
select index_is_unique('ticketiq', 'audit', 'audit_one_resume_per_epoch_idx');
select is(
    (
        select pg_get_expr(i.indpred, i.indrelid) from pg_index as i
        where i.indexrelid = 'ticketiq.audit_one_resume_per_epoch_idx'::regclass
    ),
    '(event = ANY (ARRAY[''agent.run.crash_resumed''::text, ''agent.run.resumed''::text]))',
    'one resume audit row (crash_resumed or resumed) per run and epoch'
);
select has_index('ticketiq', 'approval_requests', 'approval_requests_waiting_idx', 'requested_at');
select is(
    (
        select pg_get_expr(i.indpred, i.indrelid) from pg_index as i
        where i.indexrelid = 'ticketiq.approval_requests_waiting_idx'::regclass
    ),
    '(state = ''waiting''::text)',
    'approval_requests_waiting_idx holds waiting requests only'
);
select has_index('ticketiq', 'runs', 'runs_parent_idx', 'parent_run_id');
select is(
    (
        select pg_get_expr(i.indpred, i.indrelid) from pg_index as i
        where i.indexrelid = 'ticketiq.runs_parent_idx'::regclass
    ),
    '(parent_run_id IS NOT NULL)',
    'runs_parent_idx holds child runs only'
);
select has_index('ticketiq', 'runs', 'runs_wait_key_idx', 'wait_key');
select is(
    (
        select pg_get_expr(i.indpred, i.indrelid) from pg_index as i
        where i.indexrelid = 'ticketiq.runs_wait_key_idx'::regclass
    ),
    '((status)::text = ''suspended''::text)',
    'runs_wait_key_idx holds suspended runs only'
);
select has_index('ticketiq', 'entries', 'entries_pending_idx', 'received_at');
select is(
    (
        select pg_get_expr(i.indpred, i.indrelid) from pg_index as i
        where i.indexrelid = 'ticketiq.entries_pending_idx'::regclass
    ),
    '(state = ''pending''::text)',
    'entries_pending_idx holds pending entries only'
);
select has_index('ticketiq', 'entries', 'entries_run_idx', 'run_id');
select has_index('ticketiq', 'cron_schedules', 'cron_schedules_due_idx', 'next_fire_at');
select has_index('ticketiq', 'answers', 'answers_retain_until_idx', 'retain_until');
select is(
    (
        select pg_get_expr(i.indpred, i.indrelid) from pg_index as i
        where i.indexrelid = 'ticketiq.cron_schedules_due_idx'::regclass
    ),
    'enabled',
    'cron_schedules_due_idx holds enabled schedules only'
);

set local enable_seqscan = off;
select matches(
    tiq_test.plan_of($$
        select r.run_id from ticketiq.runs as r
        where r.status = 'running' and r.lease_expires_at <= ticketiq.now()
        order by r.lease_expires_at
        limit 1000
        for update skip locked
    $$),
    'runs_running_lease_idx',
    'the sweep''s lookup can use runs_running_lease_idx'
);

select has_index('ticketiq', 'runs', 'runs_created_idx', array['created_at', 'run_id']);
select has_index('ticketiq', 'runs', 'runs_owner_created_idx', array['owner', 'created_at', 'run_id']);

select * from finish();
rollback;
