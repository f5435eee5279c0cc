"""Async clients for the outside vendors agent runs write to (needs httpx).

:mod:`ticketiq_pg.vendors.clients` speaks the request each real vendor receives, with the
route properties the settlement logic needs.  The local stand-in that tests run against is
the repository's ``harness.vendor_sim`` (not part of the package).
"""
