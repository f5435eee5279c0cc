"""A local stand-in for the outside vendors, which records every request it receives.

* :mod:`~harness.vendor_sim.server`: one stdlib HTTP server process on
  127.0.0.1 that imitates the documented write semantics of incident.io, Jira, Microsoft
  Teams, Discord, SQS FIFO and SNS FIFO, and records every request, durably, in its own SQLite file
  (:mod:`~.store`; dispatch in :mod:`~.app`, one route module per vendor or pair of
  vendors, ``/_control`` in :mod:`~.control`).  Tests count duplicate writes where they
  would land: in that file.
* :mod:`~harness.vendor_sim.process`: :class:`VendorService` starts, stops and
  attaches to that server and drives its ``/_control`` endpoints (needs httpx).

Nothing here is imported eagerly, so the server runs on the standard library alone.
"""
