-- _require_run_filters: each time is null or finite; either infinity,
-- anywhere in the list, raises TQ004.
begin;
select plan(4);

select lives_ok(
    $$select ticketiq._require_run_filters(null, null, null, null, false,
        array[null, '2030-01-01'::timestamptz, null], 1, 500)$$,
    'nulls and a finite time'
);
select throws_ok(
    $$select ticketiq._require_run_filters(null, null, null, null, false,
        array['2030-01-01'::timestamptz, 'infinity'], 1, 500)$$,
    'TQ004', 'times must be finite', 'infinity'
);
select throws_ok(
    $$select ticketiq._require_run_filters(null, null, null, null, false,
        array[null, '-infinity'::timestamptz], 1, 500)$$,
    'TQ004', 'times must be finite', '-infinity after a null'
);
select lives_ok(
    $$select ticketiq._require_run_filters(null, null, null, null, false, array[]::timestamptz[], 1, 500)$$,
    'no times'
);

select * from finish();
rollback;
