"""Performance evidence for ticketiq-pg: ``python -m bench`` (``make bench``).

Every figure is measured on the machine the command runs on, side by side in
one run, against its limit or its peer on the same PostgreSQL server:

1. checkpoint step throughput vs a raw single-statement UPDATE (``throughput``)
2. DBOS Transact workflows on the same server (``peer``)
3. round trips per step, from pg_stat_statements and the driver (``roundtrips``)
4. lease renewal at scale (``lease_scale``)
5. sweep and adopt cost versus history (``history``)
6. wake-up latency, NOTIFY and the poll fallback (``wakeup``)
7. recovery time from the kill trials' report (``recovery``)

``python -m bench --smoke`` (``make bench-smoke``) runs the same code with
tiny sizes in seconds, so CI keeps the benchmark from rotting.  Tests never
assert timings; this command only reports them.
"""
