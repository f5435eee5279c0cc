-- _require_run_filters: statuses are a one-dimensional list of run
-- statuses; with unfinished only, of running, claimed, suspended (a
-- finished run is not stopped).
begin;
select plan(7);

select lives_ok(
    $$select ticketiq._require_run_filters(null, null, null,
        array['running', 'claimed', 'suspended', 'completed', 'failed', 'stopped'], false, null, 1, 500)$$,
    'every status'
);
select lives_ok(
    $$select ticketiq._require_run_filters(null, null, null, array['running', 'claimed', 'suspended'], true,
        null, 1, 500)$$,
    'unfinished only: the unfinished statuses'
);
select throws_ok(
    $$select ticketiq._require_run_filters(null, null, null, array['nope'], false, null, 1, 500)$$, 'TQ004',
    'statuses must be a list of running, claimed, suspended, completed, failed, stopped', 'an unknown status'
);
select throws_ok(
    $$select ticketiq._require_run_filters(null, null, null, array['running', null], false, null, 1, 500)$$,
    'TQ004', null, 'a null status'
);
select throws_ok(
    $$select ticketiq._require_run_filters(null, null, null, array[array['failed'], array['failed']], false,
        null, 1, 500)$$,
    'TQ004', null, 'a two-dimensional array'
);
select throws_ok(
    $$select ticketiq._require_run_filters(null, null, null, array['running', 'failed'], true, null, 1, 500)$$,
    'TQ004', 'statuses must be a list of running, claimed, suspended (a finished run is not stopped)',
    'unfinished only: a finished status'
);
select throws_ok(
    $$select ticketiq._require_run_filters(null, null, null, array['nope'], true, null, 1, 500)$$, 'TQ004',
    'statuses must be a list of running, claimed, suspended (a finished run is not stopped)',
    'unfinished only: an unknown status'
);

select * from finish();
rollback;
