-- purge_answers: finds the answers past their retention through the index
-- on retain_until (schema 10), so its cost does not grow with the answers
-- kept: among 5,000 answers kept for an hour it reads none in a sequential
-- scan.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select has_index('ticketiq', 'answers', 'answers_retain_until_idx', 'retain_until');
insert into ticketiq.runs (
    run_id, owner, run_as, channel, entry_point, correlation_id, status, epoch, created_at,
    updated_at, finished_at, last_step
)
select
    tiq_test.rid(g.n) as run_id,
    'o' as owner,
    'ra' as run_as,
    'web' as channel,
    'ep' as entry_point,
    'c' || g.n as correlation_id,
    'completed' as status,
    1 as epoch,
    '2030-01-01 00:00:00+00'::timestamptz as created_at,
    '2030-01-01 00:00:00+00'::timestamptz as updated_at,
    '2030-01-01 00:00:00+00'::timestamptz as finished_at,
    1 as last_step
from generate_series(1, 5000) as g (n);
insert into ticketiq.answers (
    run_id, step, epoch, body, seal, seal_key_id, sealed_at, retain_until, handed_on_at, handed_on_epoch
)
select
    tiq_test.rid(g.n) as run_id,
    1 as step,
    1 as epoch,
    '{}'::jsonb as body,
    's' as seal,
    'k' as seal_key_id,
    '2030-01-01 00:00:00+00'::timestamptz as sealed_at,
    '2030-01-01 01:00:00+00'::timestamptz as retain_until,
    '2030-01-01 00:00:00+00'::timestamptz as handed_on_at,
    1 as handed_on_epoch
from generate_series(1, 5000) as g (n);
analyze ticketiq.answers;
analyze ticketiq.runs;

create temp table before_purge on commit drop as
select t.seq_tup_read
from pg_stat_xact_user_tables as t
where t.relid = 'ticketiq.answers'::regclass;
select is(ticketiq.purge_answers(), 0, 'nothing past its retention');
select is(
    (
        select t.seq_tup_read - b.seq_tup_read
        from pg_stat_xact_user_tables as t cross join before_purge as b
        where t.relid = 'ticketiq.answers'::regclass
    ),
    0::bigint,
    'no answer read in a sequential scan'
);

select * from finish();
rollback;
