-- Migration 0017: one lease machine for runs and jobs.
--
-- A run's lease and a job's lease were two copies of one machine (fence,
-- renewal, lapsed-claim sweep, process death), differing by names only.
-- From this version one set of functions serves both, parameterised by
-- ticketiq.lease_kind: ticketiq._fence (every fenced write of either kind),
-- ticketiq.renew_leases (one renewal), ticketiq._claim_lapsed (the one
-- claim of a lapsed lease, used by sweep_lapsed, sweep_jobs, take_over_child
-- and watch_processes).  The lease stays on each kind's own row (runs:
-- epoch, lease_holder, lease_expires_at; jobs: epoch, holder,
-- lease_expires_at), so a run's checkpoint is still one fenced UPDATE of
-- its row with no join and no second row lock; nothing moves, and a run or
-- job in flight during the upgrade keeps its holder, epoch and expiry.
--
-- No table changes: the migration adds the type the one fence returns
-- (ticketiq.fenced: the locked row of its kind) and drops the old signatures (the installer
-- drops only names no functions/ file defines; _fence, renew_leases and
-- _claim_lapsed keep their names with a kind added); the functions/ files
-- create the new ones.
create type ticketiq.fenced as (
    run ticketiq.runs,
    job ticketiq.jobs
);

drop function if exists ticketiq._fence(uuid, bigint, timestamptz);
drop function if exists ticketiq._fence_job(uuid, bigint, timestamptz);
drop function if exists ticketiq.renew_leases(text, uuid[], bigint[], double precision);
drop function if exists ticketiq.renew_job_leases(text, uuid[], bigint[], double precision);
drop function if exists ticketiq._claim_lapsed(text, integer, integer, uuid, jsonb, text[]);

insert into ticketiq.schema_migrations (version, name) values (17, 'one_lease_machine');
