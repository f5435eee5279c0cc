"""A local stand-in for the outside vendors agent runs write to, and async clients for them.

* :mod:`ticketiq_pg.vendors.server`: one stdlib HTTP server process on 127.0.0.1 that imitates
  the documented write semantics of incident.io, Jira, Microsoft Teams, Discord and SQS FIFO,
  and records every request it receives, durably, in its own SQLite file.  Tests count
  duplicate writes where they would land: in that file.
* :mod:`ticketiq_pg.vendors.process`: :class:`VendorService` starts/stops/attaches to that
  server and drives its ``/_control`` endpoints (needs httpx).
* :mod:`ticketiq_pg.vendors.clients`: async clients speaking the request each real vendor
  receives, with the route properties the settlement logic needs (needs httpx).

Nothing here is imported eagerly, so the server runs on the standard library alone.
"""
