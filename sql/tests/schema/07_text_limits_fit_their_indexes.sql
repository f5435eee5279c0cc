-- schema: one rule for every text limit (issue 46, finding 2).  Every btree
-- index of schema ticketiq holds the largest row its columns' declared
-- limits allow, counted at four bytes a character, within btree's 2704
-- bytes; a text column in an index has its limit declared on the column (a
-- CHECK of char_length or octet_length, migration 18).  The functions that
-- write a column check the same limit first, naming the argument (TQ004),
-- so no documented input reaches 54000.
begin;
select plan(3);

-- Written only by the functions, which hold these limits (in characters):
-- runs takes no CHECK more, since every CHECK of runs costs each checkpoint's
-- update of the row (migration 8).
create temporary table allowed as
select '{"runs.lease_holder": 512, "runs.wait_key": 512, "runs.idempotency_key": 600,
    "runs.owner": 512}'::jsonb as limits;

select is_empty(
    $$select b.index_name, b.undeclared from tiq_test.index_row_bounds((select a.limits from allowed as a)) as b
      where cardinality(b.undeclared) > 0$$,
    'every text column of a btree index has a declared limit'
);
select is_empty(
    $$select b.index_name, b.max_bytes from tiq_test.index_row_bounds((select a.limits from allowed as a)) as b
      where b.max_bytes > 2704$$,
    'every btree index holds its largest row (four bytes a character) within 2704 bytes'
);
select cmp_ok(
    (
        select count(*)::integer from tiq_test.index_row_bounds() as b
        where cardinality(b.undeclared) > 0 or b.max_bytes > 100
    ),
    '>=', 15, 'the text indexes are found (entries, signals, timers, trace contexts, ...)'
);

select * from finish();
rollback;
