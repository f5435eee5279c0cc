-- list_runs: a bad filter, cursor or limit is TQ004.
begin;
select plan(7);

select throws_ok($$select * from ticketiq.list_runs(p_limit => 0)$$, 'TQ004', null, 'a limit of 0');
select throws_ok($$select * from ticketiq.list_runs(p_limit => 501)$$, 'TQ004', null, 'a limit over 500');
select throws_ok(
    $$select * from ticketiq.list_runs(p_statuses => array['nope'])$$, 'TQ004', null, 'an unknown status'
);
select throws_ok(
    $$select * from ticketiq.list_runs(p_statuses => array[array['failed'], array['failed']])$$, 'TQ004', null,
    'a two-dimensional array'
);
select throws_ok(
    $$select * from ticketiq.list_runs(p_after_created => '2030-01-01')$$, 'TQ004', null, 'half a cursor'
);
select throws_ok($$select * from ticketiq.list_runs(p_owner => '')$$, 'TQ004', null, 'an empty owner');
select throws_ok(
    $$select * from ticketiq.list_runs(p_created_from => 'infinity')$$, 'TQ004', null, 'an infinite time'
);

select * from finish();
rollback;
