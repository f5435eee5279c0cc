-- _require_run_filters: owner, kind and workflow null or within their
-- lengths, the limit from 1 to the caller's most; TQ004 otherwise.
begin;
select plan(8);

select lives_ok(
    $$select ticketiq._require_run_filters(null, null, null, null, false, null, 1, 500)$$, 'no filter, limit 1'
);
select lives_ok(
    $$select ticketiq._require_run_filters(repeat('o', 512), repeat('k', 512), repeat('w', 200), null, false,
        null, 500, 500)$$,
    'each at its longest, the limit at its most'
);
select throws_ok(
    $$select ticketiq._require_run_filters('', null, null, null, false, null, 1, 500)$$, 'TQ004', null, 'an empty owner'
);
select throws_ok(
    $$select ticketiq._require_run_filters(null, repeat('k', 513), null, null, false, null, 1, 500)$$, 'TQ004', null,
    'a kind too long'
);
select throws_ok(
    $$select ticketiq._require_run_filters(null, null, repeat('w', 201), null, false, null, 1, 500)$$, 'TQ004', null,
    'a workflow too long'
);
select throws_ok(
    $$select ticketiq._require_run_filters(null, null, null, null, false, null, 0, 500)$$, 'TQ004',
    'limit must be 1 to 500, got 0', 'a limit of 0'
);
select throws_ok(
    $$select ticketiq._require_run_filters(null, null, null, null, true, null, 1001, 1000)$$, 'TQ004',
    'limit must be 1 to 1000, got 1001', 'over the caller''s most'
);
select throws_ok(
    $$select ticketiq._require_run_filters(null, null, null, null, false, null, null, 500)$$, 'TQ004', null,
    'no limit'
);

select * from finish();
rollback;
