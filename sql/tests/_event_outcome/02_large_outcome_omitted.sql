-- _event_outcome: past 4096 bytes (pg_column_size) the event says the
-- outcome was left out instead of carrying it; the boundary is inclusive.
-- No outcome at all (SQL null: no size) is said to be left out too.
begin;
select plan(4);

create temporary table sizes on commit drop as
select
    n,
    pg_column_size(to_jsonb(repeat('x', n))) as size
from generate_series(4000, 4200) as n;

select is(
    ticketiq._event_outcome(to_jsonb(repeat('x', (select max(s.n) from sizes as s where s.size <= 4096)))) ? 'outcome',
    true,
    '4096 bytes: carried'
);
select is(
    ticketiq._event_outcome(to_jsonb(repeat('x', (select min(s.n) from sizes as s where s.size > 4096)))),
    '{"outcome_omitted": true}'::jsonb,
    'a byte more: omitted'
);
select is(
    ticketiq._event_outcome(to_jsonb(repeat('x', 100000))),
    '{"outcome_omitted": true}'::jsonb,
    'a large outcome: omitted'
);

select is(ticketiq._event_outcome(null), '{"outcome_omitted": true}'::jsonb, 'SQL null: omitted');

select * from finish();
rollback;
