-- Migration 0010: hardening against a caller that attacks the API directly.
--
-- The functions now check a documented limit for every text argument they
-- store or index before anything else (TQ004 naming the argument), refuse a
-- cron schedule that could never fire, read the lease clock after the row
-- lock and release a liveness token only from the session holding it; those
-- are function bodies, installed from sql/functions.  What needs a
-- migration:
--   * ticketiq.purge_answers finds the answers past their retention through
--     a new index on answers.retain_until instead of reading every answer;
--   * a cron schedule written before the rules that cannot fire (a next
--     fire that is not finite, an interval outside 1 to 1e9 seconds, a name
--     over 256 characters or an identity over 512) is disabled:
--     ticketiq.fire_due_crons reads such a schedule no more, and disabled it
--     shows as what it is.  Changing it with upsert_cron_schedule (a first
--     fire time given) enables it again.

create index answers_retain_until_idx on ticketiq.answers (retain_until);

update ticketiq.cron_schedules as c
set enabled = false
where c.enabled
    and not (
        isfinite(c.next_fire_at)
        and c.every_seconds between 1 and 1e9
        and length(c.name) <= 256
        and length(c.owner) <= 512
        and length(c.run_as) <= 512
        and length(c.channel) <= 512
    );

insert into ticketiq.schema_migrations (version, name) values (10, 'hardening');
