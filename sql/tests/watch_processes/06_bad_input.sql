-- watch_processes: an empty watcher or a negative max losses is TQ004.
begin;
select plan(3);

select throws_ok($$select ticketiq.watch_processes('')$$, 'TQ004', null, 'an empty watcher');
select throws_ok($$select ticketiq.watch_processes(null)$$, 'TQ004', null, 'a null watcher');
select throws_ok(
    $$select ticketiq.watch_processes('w', null, '{}', -1)$$, 'TQ004', null, 'negative max losses'
);

select * from finish();
rollback;
