-- sweep_lapsed: a lapse is claimed once (I3): a second sweep, by the same or
-- another sweeper, claims nothing and changes nothing.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.advance(9);
select is(
    (select count(*) from ticketiq.sweep_lapsed('leader-a')), 1::bigint,
    'the first sweep claims the run'
);
select tiq_test.advance(3);
select tiq_test.save_fingerprint();

select is_empty($$select 1 from ticketiq.sweep_lapsed('leader-a')$$, 'a second sweep claims nothing');
select is_empty($$select 1 from ticketiq.sweep_lapsed('leader-b')$$, 'another leader''s sweep claims nothing');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'and changes nothing');
select is(
    (select (r.epoch::bigint, r.loss_count::integer) from ticketiq.runs as r where r.run_id = tiq_test.rid(1)),
    row(2::bigint, 1),
    'epoch 2, one loss'
);

select * from finish();
rollback;
