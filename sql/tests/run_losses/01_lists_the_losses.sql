-- run_losses: one row per loss of the run, oldest first, with the process
-- that lost it and how it was detected; a run never lost has none.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.lose(tiq_test.rid(1));
select results_eq(
    $$select l.lapsed_holder, l.detected_by, l.loss_count from ticketiq.run_losses(tiq_test.rid(1)) as l$$,
    $$values ('p1'::text, 'lease_lapsed'::text, 1)$$,
    'the loss, by the process that held the run'
);

select tiq_test.new_run('p1', 8, tiq_test.rid(2));
select is_empty(
    $$select * from ticketiq.run_losses(tiq_test.rid(2))$$, 'a run never lost has none'
);
select is_empty(
    $$select * from ticketiq.run_losses(tiq_test.rid(9))$$, 'an unknown run has none'
);

select * from finish();
rollback;
