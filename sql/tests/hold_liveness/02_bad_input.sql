-- hold_liveness: an empty id is TQ004; a process never registered is
-- TQ011; neither takes a lock.
begin;
select plan(3);

select throws_ok($$select ticketiq.hold_liveness('')$$, 'TQ004', null, 'an empty id');
select throws_ok($$select ticketiq.hold_liveness('nobody')$$, 'TQ011', null, 'an unregistered process');
select is(
    (select count(*) from pg_locks as l
     where l.locktype = 'advisory' and l.classid = 29809 and l.pid = pg_backend_pid()),
    0::bigint,
    'no lock was taken'
);

select * from finish();
rollback;
