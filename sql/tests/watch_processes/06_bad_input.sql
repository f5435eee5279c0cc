-- watch_processes: an empty watcher, a negative max losses or a negative
-- or infinite grace is TQ004.
begin;
select plan(5);

select throws_ok($$select ticketiq.watch_processes('')$$, 'TQ004', null, 'an empty watcher');
select throws_ok($$select ticketiq.watch_processes(null)$$, 'TQ004', null, 'a null watcher');
select throws_ok(
    $$select ticketiq.watch_processes('w', null, '{}', -1)$$, 'TQ004', null, 'negative max losses'
);
select throws_ok(
    $$select ticketiq.watch_processes('w', null, '{}', 2, -0.1)$$, 'TQ004', null, 'a negative grace'
);
select throws_ok(
    $$select ticketiq.watch_processes('w', null, '{}', 2, 'Infinity')$$, 'TQ004', null,
    'an infinite grace'
);

select * from finish();
rollback;
