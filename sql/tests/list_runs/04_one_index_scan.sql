-- list_runs: a page is one index range scan, whatever the number of runs
-- kept: one owner's through runs_owner_created_idx, every owner's through
-- runs_created_idx.  The plans of the function's own queries (as its
-- dynamic statement builds them), with statistics of 5,000 runs of 50 owners.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.start_run('p1', 'owner-' || (i % 50), 'ra', 'web', 'run', false, 60, '{}')
from generate_series(1, 5000) as i;
analyze ticketiq.runs;

select matches(
    tiq_test.plan_of($$
        select r.run_id from ticketiq.runs as r
        where true and r.owner = 'owner-7'
            and (r.created_at, r.run_id) < ('2031-01-01'::timestamptz, '00000000-0000-0000-0000-000000000001'::uuid)
        order by r.created_at desc, r.run_id desc limit 51
    $$),
    'runs_owner_created_idx',
    'one owner''s page reads runs_owner_created_idx'
);
select matches(
    tiq_test.plan_of($$
        select r.run_id from ticketiq.runs as r
        where true and (r.created_at, r.run_id) < ('2031-01-01'::timestamptz, '00000000-0000-0000-0000-000000000001'::uuid)
        order by r.created_at desc, r.run_id desc limit 51
    $$),
    'runs_created_idx',
    'every owner''s page reads runs_created_idx'
);
select is(
    (select count(*) from ticketiq.list_runs(p_owner => 'owner-7', p_limit => 500)), 100::bigint,
    'and list_runs finds that owner''s runs'
);

select * from finish();
rollback;
