-- adopt_run: a run is adopted once: a second adopt finds nothing and the
-- run keeps its first adopter (I3).
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.lose(tiq_test.rid(1));
select is(
    (select a.epoch from ticketiq.adopt_run('p2', 8, tiq_test.rid(1)) as a), 3::bigint,
    'the first adopt takes epoch 3'
);
select tiq_test.save_fingerprint();

select is_empty($$select 1 from ticketiq.adopt_run('p3', 8, tiq_test.rid(1))$$, 'a second adopt of the run: no row');
select is_empty($$select 1 from ticketiq.adopt_run('p3', 8)$$, 'nor any other claimed run');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'the run keeps p2 at epoch 3');

select * from finish();
rollback;
