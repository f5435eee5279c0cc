-- Migration 0016: a resume's audit row found by one index probe, whatever the statistics.
--
-- ticketiq.record_resume finds the one resume row of a run's epoch by
-- (run_id, epoch, event in (crash_resumed, resumed)).  The unique index held
-- crash_resumed rows only, so the lookup could not use it: with statistics
-- older than a burst of resumes the planner ANDed the run's index with the
-- event's, and each lookup walked every resume row ever written (bench section
-- 15: adopting 1,000 runs beside 100,000 resume rows took 7.1 s against 0.47 s
-- with this index).  A run has one resume row per epoch of either kind
-- (record_resume writes one, at adoption), so the index holds both.
drop index ticketiq.audit_one_resume_per_epoch_idx;

create unique index audit_one_resume_per_epoch_idx on ticketiq.audit (run_id, epoch)
where event in ('agent.run.crash_resumed', 'agent.run.resumed');

insert into ticketiq.schema_migrations (version, name) values (16, 'resume_audit_lookup');
