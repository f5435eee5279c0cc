"""The kill trials in the production shape: an edge, rolling deploys, Patroni, a pooler.

:class:`Shape` plugs into :class:`~harness.trials.Arena` (its ``shape``):

* with an :class:`~harness.edge.Edge` (``LIYAGENT_KILL_EDGE=1``) every app
  process listens on one of the edge's server slots, is only sent work once the edge
  sees it up, and every entry (and every retry of one) goes through the edge.  After
  each round: every request the edge answered 2xx has exactly one inbox entry with one
  run; at the end the edge's own counters (its frontend's ``hrsp_5xx``, retries,
  redispatches) go into the report as ``edge``/``edge_5xx``.
* ``deploy`` mode (:meth:`before_round`, :meth:`fault`): a new process is started and
  made ready (up at the edge, when there is one), then the victim gets SIGTERM and
  drains (``/healthz`` 503 for ``TICKETIQ_HTTP_DRAIN_GRACE``, its runs released at their
  next step boundary, no loss counted); each released run's wait, from its release to
  its adoption and to its next step written, is the trial's ``handover_wait`` and
  ``handover_step``.
* ``patroni`` mode: :class:`~harness.patroni.PatroniCluster` fails over by
  itself after its primary's PostgreSQL (and in some rounds its Patroni agent) is
  SIGKILLed; the round ends once the old primary streams again as a standby.
* A pooler (:class:`~harness.pooler.PgBouncer`) needs nothing here: the app
  processes' ``TICKETIQ_DATABASE_URL`` names it (:func:`pooler_env`).
"""

from __future__ import annotations

import random
import signal
import time
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from harness.edge import Edge
    from harness.patroni import PatroniCluster
    from harness.pooler import PgBouncer
    from harness.trial_proc import Proc
    from harness.trial_report import Report, Trial

#: The modes a :class:`Shape` faults in: a rolling deploy's drain, a Patroni failover.
SHAPE_MODES = ("deploy", "patroni")
#: What every app process of a shaped trial gets: the drain grace docs/operations.md
#: recommends behind HAProxy (longer than the edge's fall 2 x inter 500 ms).
DRAIN_GRACE = "2"


class Arena(Protocol):
    """What a :class:`Shape` uses of the arena it plugs into
    (:class:`harness.trials.Arena`): a new app process, a query on the trials' database."""

    def spawn(self, name: str, **extra: str) -> tuple[Proc, str]: ...

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]: ...


def pooler_env(pooler: PgBouncer, dbname: str, direct: str) -> dict[str, str]:
    """The app processes' settings behind ``pooler``: its URL, and in transaction mode no
    prepared statements and the process's own sessions (liveness, renewal, adoption,
    LISTEN) on real sessions (``direct``, the server itself), as docs/operations.md
    recommends: a dead process is still noticed by its session, not only by its leases."""
    env = {"TICKETIQ_DATABASE_URL": pooler.url(dbname)}
    if pooler.mode == "transaction":
        env.update(TICKETIQ_PREPARED_STATEMENTS="false", TICKETIQ_SESSIONS_DATABASE_URL=direct)
    return env


class Shape:
    """The edge, the deploy and the Patroni faults of a kill-trial run."""

    def __init__(self, *, edge: Edge | None = None, patroni: PatroniCluster | None = None,
                 seed: int = 0) -> None:
        self.edge = edge
        self.patroni = patroni
        self.rng = random.Random(seed)
        self.ports: dict[str, int] = {}
        self.next_proc: Proc | None = None
        #: Patroni: the rounds (victim names) whose fault was a planned switchover.
        self.switchovers: set[str] = set()
        self._faults = 0
        #: Every app process's extra settings: the drain grace behind an edge or in a
        #: deploy (the edge's checks take a draining process out before it closes).
        self.env = {"TICKETIQ_HTTP_DRAIN_GRACE": DRAIN_GRACE}

    # -- processes ----------------------------------------------------------------

    def port_for(self, name: str) -> int:
        """A free edge slot for the process ``name`` (0: any port, no edge)."""
        if self.edge is None:
            return 0
        taken = set(self.ports.values())
        port = next(p for p in self.edge.slots if p not in taken)
        self.ports[name] = port
        return port

    def spawned(self, name: str, proc: Proc, port: int) -> None:
        if self.edge is not None:
            self.edge.wait_status(port, "UP")

    def entry_url(self, victim_url: str) -> str:
        return self.edge.url if self.edge is not None else victim_url

    def retry_url(self, survivor_url: str) -> str:
        return self.edge.url if self.edge is not None else survivor_url

    # -- faults -------------------------------------------------------------------

    def before_round(self, arena: Arena, mode: str, name: str) -> None:
        if mode == "deploy":
            # A deploy starts the new process and waits until it is ready first: here,
            # before the round's entries, so the fault is timed as in every mode; it
            # leaves fresh entries to the victim for 2 s, as the survivor does.
            self.next_proc, _ = arena.spawn(f"{name}-next", TICKETIQ_ENTRY_CLAIM_DELAY="2")

    def fault(self, arena: Arena, mode: str, victim: Proc, name: str) -> float:
        if mode == "deploy":
            at = time.time()
            victim.signal(signal.SIGTERM)
            victim.popen.wait(60)  # the drain: healthz unready, runs released, exit
            return at
        if mode == "patroni":
            if self.patroni is None:
                raise RuntimeError("patroni mode needs a PatroniCluster")
            self._faults += 1
            if self._faults % 4 == 2:
                # Every fourth round (the second first) is a planned switchover instead.
                self.switchovers.add(name)
                self.patroni.switchover()
            else:
                # Some rounds lose the whole host: the Patroni agent with its PostgreSQL.
                self.patroni.kill_primary(agent_too=self.rng.random() < 0.3)
            return time.time()
        raise ValueError(mode)

    # -- judging ------------------------------------------------------------------

    def after_round(self, arena: Arena, mode: str, name: str, trials: list[Trial],
                    fault_at: float, report: Report) -> None:
        if mode == "deploy":
            for trial in trials:
                trial.loss_allowed = 0  # a drain hands runs over; it loses none
            self._handovers(arena, name, trials, fault_at)
            if self.next_proc is not None:
                self.next_proc.stop()
                self.ports.pop(self.next_proc.name, None)
                self.next_proc = None
        if mode == "patroni":
            assert self.patroni is not None
            self.patroni.settle()
            if name in self.switchovers:
                report.shape_problems.extend(
                    f"round {t.round} {t.kind}: the switchover handed its run over "
                    f"({t.claimed_by})" for t in trials if t.claimed_by)
        self.ports.pop(name, None)
        if self.edge is not None:
            report.shape_problems.extend(self.one_run_per_2xx(arena, trials))

    def _handovers(self, arena: Arena, name: str, trials: list[Trial],
                   fault_at: float) -> None:
        for trial in trials:
            if trial.run_id is None:
                continue
            rows = arena.query(
                "select extract(epoch from r.at), r.epoch, extract(epoch from ("
                "  select min(a.at) from ticketiq.audit as a where a.run_id = r.run_id"
                "  and a.event = 'agent.run.adopted' and a.epoch >= r.epoch and a.at >= r.at)),"
                " extract(epoch from (select min(t) from ("
                "  select c.written_at as t from ticketiq.checkpoints as c"
                "   where c.run_id = r.run_id and c.epoch >= r.epoch"
                "  union all select s.sealed_at from ticketiq.answers as s"
                "   where s.run_id = r.run_id and s.epoch >= r.epoch) as steps))"
                " from ticketiq.audit as r where r.run_id = %s and r.event = "
                "'agent.run.released' and r.actor = %s and r.at >= to_timestamp(%s)"
                " order by r.audit_id limit 1", trial.run_id, name, fault_at - 1)
            if not rows:
                continue
            released, _, adopted, step = rows[0]
            trial.claimed_by = trial.claimed_by or "released"
            if adopted is not None:
                trial.handover_wait = max(0.0, float(adopted) - float(released))
            if step is not None:
                trial.handover_step = max(0.0, float(step) - float(released))

    @staticmethod
    def one_run_per_2xx(arena: Arena, trials: list[Trial]) -> list[str]:
        problems = []
        for trial in trials:
            if not any(200 <= status < 300 for status in trial.http_status):
                continue
            rows = arena.query(
                "select count(distinct e.entry_id), count(distinct r.run_id)"
                " from ticketiq.entries as e left join ticketiq.runs as r using (run_id)"
                " where e.kind = %s and e.sender_id = %s", trial.entry_kind, trial.sender_id)
            entries, runs = rows[0] if rows else (0, 0)
            if (entries, runs) != (1, 1):
                problems.append(f"round {trial.round} {trial.kind}: the edge answered "
                                f"{trial.http_status} but {entries} entries, {runs} runs")
        return problems

    def finish(self, arena: Arena, report: Report) -> None:
        if self.edge is not None:
            seen = [s for t in report.trials for s in t.http_status]
            report.edge = {**self.edge.counters(),
                           "client_5xx": sum(1 for s in seen if s >= 500),
                           "client_statuses": {str(s): seen.count(s) for s in sorted(set(seen))}}


# -- setting a shaped run up ----------------------------------------------------------

def missing(mode: str, *, edge: bool, pooler: str | None) -> str | None:
    """The install command for what a run of these settings needs and lacks (None: ok)."""
    import shutil

    from harness.edge import Edge
    from harness.pooler import PgBouncer

    packages = []
    if edge and not Edge.available():
        packages.append("haproxy")
    if mode == "patroni" and any(shutil.which(b) is None for b in ("patroni", "etcd")):
        packages += ["patroni", "etcd-server"]
    if pooler and not PgBouncer.available():
        packages.append("pgbouncer")
    if not packages:
        return None
    return "apt-get install -y " + " ".join(packages)


def open_shape(stack: Any, mode: str, *, edge: bool, seed: int, base_dir: Any = None
               ) -> tuple[Shape | None, PatroniCluster | None]:
    """Start the edge and the Patroni cluster these settings need, closed by ``stack``
    (a :class:`contextlib.ExitStack`).  None when the run needs no shape."""
    from harness.edge import Edge
    from harness.patroni import PatroniCluster

    if not edge and mode not in ("deploy", "patroni"):
        return None, None
    patroni = stack.enter_context(PatroniCluster(base_dir=base_dir)) \
        if mode == "patroni" else None
    the_edge = stack.enter_context(Edge(4, base_dir=base_dir)) if edge else None
    return Shape(edge=the_edge, patroni=patroni, seed=seed), patroni


def open_pooler(stack: Any, url: str, mode: str, base_dir: Any = None
                ) -> tuple[PgBouncer, dict[str, str]]:
    """A PgBouncer in ``mode`` before the server of ``url``, and the app processes' env."""
    from urllib.parse import urlsplit

    from harness.pooler import PgBouncer

    pooler = stack.enter_context(PgBouncer(url, mode, base_dir=base_dir))
    return pooler, pooler_env(pooler, urlsplit(url).path.lstrip("/"), url)
