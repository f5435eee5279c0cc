"""The figures an operator's monitoring reads from the database (``ticketiq_database_*``).

Read in one read-only snapshot per scrape by :mod:`ticketiq_pg.observe.metrics`; each is
the same whichever process reads it, so they are never summed across processes.  The
resume histogram reads every ``agent.run.crash_resumed`` row (its audit index), from the
lost process's last sign of life (``processes.last_seen_at``: its last lease renewal) to
the run's first checkpoint written at or after the resume's epoch, or its end.
"""

from __future__ import annotations

from typing import Any

from ticketiq_pg.db.inspect import snapshot

#: Upper bounds (seconds) of the resume histogram's buckets.
RESUME_BUCKETS = (0.5, 1.0, 2.0, 3.0, 5.0, 8.0, 10.0, 15.0, 20.0, 30.0, 60.0, 120.0)

_RESUMES = """
select extract(epoch from least(
           (select min(k.written_at) from ticketiq.checkpoints as k
            where k.run_id = a.run_id and k.epoch >= a.epoch),
           case when r.finished_at >= a.at then r.finished_at end)
       - p.last_seen_at)::float8 as seconds
from ticketiq.audit as a
inner join ticketiq.runs as r on r.run_id = a.run_id
cross join lateral (
    select l.detail ->> 'lapsed_holder' as holder
    from ticketiq.audit as l
    where l.run_id = a.run_id and l.event = 'agent.run.lease_lapsed' and l.audit_id < a.audit_id
    order by l.audit_id desc limit 1
) as lost
inner join ticketiq.processes as p on p.process_id = lost.holder
where a.event = 'agent.run.crash_resumed'
"""


# Each resume by its event and, after a loss, how the loss was detected (the newest
# agent.run.lease_lapsed row before it); 'none' for a resume after a wake or hand-over.
_RESUMES_BY = """
select substr(a.event, 11), coalesce(lost.detected_by, 'none'), count(*)::int
from ticketiq.audit as a
left join lateral (
    select coalesce(l.detail ->> 'reason', 'lease_lapsed') as detected_by
    from ticketiq.audit as l
    where a.event = 'agent.run.crash_resumed' and l.run_id = a.run_id
        and l.event = 'agent.run.lease_lapsed' and l.audit_id < a.audit_id
    order by l.audit_id desc limit 1
) as lost on true
where a.event in ('agent.run.crash_resumed', 'agent.run.resumed')
group by 1, 2 order by 1, 2
"""


def database_figures(url: str) -> dict[str, Any]:
    """Every ``ticketiq_database_*`` figure, read in one snapshot."""
    with snapshot(url) as conn:
        def rows(sql: str) -> list[tuple[Any, ...]]:
            return [tuple(r.values()) for r in conn.execute(sql).fetchall()]

        def one(sql: str) -> int:
            return int(next(iter(rows(sql)[0])) or 0)

        figures: dict[str, Any] = {
            "runs": rows("select status::text, entry_point::text, count(*)::int "
                         "from ticketiq.runs group by 1, 2 order by 1, 2"),
            "losses": rows("select coalesce(detail ->> 'reason', 'lease_lapsed'), count(*)::int "
                           "from ticketiq.audit where event = 'agent.run.lease_lapsed' "
                           "group by 1 order by 1"),
            "resumes": rows(_RESUMES_BY),
            "settlements": rows(
                "select s.value ->> 'settlement', count(*)::int from ticketiq.audit as a "
                "cross join lateral jsonb_array_elements(coalesce(a.detail -> 'settlements', "
                "'[]')) as s where a.event in ('agent.run.crash_resumed', 'agent.run.resumed') "
                "group by 1 order by 1"),
            "inspector": rows("select detail ->> 'outcome', count(*)::int from ticketiq.audit "
                              "where event = 'inspector.call' group by 1 order by 1"),
            "in_doubt": one("select count(*) from ticketiq.calls where state = 'in_doubt'"),
            "approvals_waiting": one("select count(*) from ticketiq.approvals_waiting"),
            "processes_alive": one("select count(*) from ticketiq.processes "
                                   "where liveness_key is not null and stopped_at is null"),
            "lost_twice": one("select count(*) from ticketiq.runs where loss_count >= 2"),
            "leases_lapsed": one("select count(*) from ticketiq.runs where status = 'running' "
                                 "and lease_expires_at < ticketiq.now()"),
            # each vendor bucket: (vendor, scope, taken, waited, slowed, in flight, tokens,
            # suspensions, runs suspended for a token now)
            "vendors": rows("select vendor, coalesce(scope, ''), taken, waited, slowed, "
                            "in_flight, tokens, suspended, waiting "
                            "from ticketiq.vendor_limit_figures()"),
            # runs waiting to start, by owner and priority
            "waiting_to_start": rows("select owner, priority::text, count(*)::int "
                                     "from ticketiq.entries where state = 'pending' "
                                     "group by 1, 2 order by 1, 2"),
            # waiting workflow runs no live process can run (a deploy dropped their version)
            "unrunnable": rows("select workflow, workflow_version, status, count(*)::int "
                               "from ticketiq.unrunnable_runs(1000) group by 1, 2, 3 "
                               "order by 1, 2, 3"),
        }
        seconds = [r[0] for r in rows(_RESUMES) if r[0] is not None]
    buckets = [(str(b), sum(1 for s in seconds if s <= b)) for b in RESUME_BUCKETS]
    buckets.append(("+Inf", len(seconds)))
    figures["resume_seconds"] = (buckets, sum(seconds), len(seconds))
    return figures
