"""The repository's harness: what the library's own tests, the kill trials, the benchmark
and the demo share.  It is not part of the wheel (an app's tests need only
:mod:`ticketiq_pg.testing`); it runs from a checkout, the repository's root on
``sys.path`` (the editable install's path entry, pytest's ``pythonpath``).

* the stand-ins for the outside world: the vendor service (:mod:`~harness.vendor_sim`)
  and the model providers (:mod:`~harness.provider_sim`);
* the scripted app a test worker runs (:mod:`~harness.scripted`, its tools, jobs and
  workflow) and the job worker child (:mod:`~harness.jobs_child`);
* what landed at the vendors, per run and call (:mod:`~harness.landed`,
  :mod:`~harness.stalled_calls`), and transient errors at random (:mod:`~harness.flaky`);
* the kill trials (:mod:`~harness.trials`, its ``trial_*`` modules, the watched runs
  of :mod:`~harness.watch_trial` with the SSE client of :mod:`~harness.sse`, the
  three-writes kind of :mod:`~harness.three_writes`) and the demo
  (:mod:`~harness.demo`, ``make demo``, on :mod:`~harness.embedded`'s server);
* the production shape: a primary with a standby (:mod:`~harness.replicated`), Patroni
  (:mod:`~harness.patroni`), HAProxy (:mod:`~harness.edge`), PgBouncer
  (:mod:`~harness.pooler`), their processes (:mod:`~harness.daemons`).

It may import the library; the library never imports it (tests/test_layout.py).
"""
