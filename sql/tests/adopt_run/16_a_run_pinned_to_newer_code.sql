-- adopt_run: a run of version 1 whose last step a worker running version 2 (and 1,
-- as compatible) took is pinned to that code: the old worker does not adopt it
-- (it might have no step the new code led it to); the new worker does.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.deploy_pair();
select ticketiq.register_process('both', 'h', 3);
select ticketiq.declare_workflows('both',
    '[{"name": "flow", "version": "2", "kind": "flow", "runs": ["2", "1"]}]');
select is((select a.run_id from ticketiq.adopt_run('both', 8, tiq_test.rid(1)) as a), tiq_test.rid(1),
    'the new worker, which runs version 1 as compatible, adopts the version 1 run');
select ticketiq.write_checkpoint(tiq_test.rid(1), tiq_test.epoch(tiq_test.rid(1)), 2,
    jsonb_set(tiq_test.body(), '{counters,workflow}',
        '{"name": "flow", "version": "1", "code": "2", "at": "new_step"}'),
    'seal-2', 'k1');
select tiq_test.lose(tiq_test.rid(1));
select is_empty($$select 1 from ticketiq.adopt_run('old', 8, tiq_test.rid(1))$$,
    'once its code took a step, the old worker leaves the run');
select is((select a.run_id from ticketiq.adopt_run('both', 8) as a), tiq_test.rid(1),
    'and a worker that runs version 2''s code adopts it');

select * from finish();
rollback;
