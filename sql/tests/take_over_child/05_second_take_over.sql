-- take_over_child: once: a second take-over right after the first finds the
-- child alive with its new holder and returns no row; no second loss, claim
-- or adoption; a sweep finds nothing either.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 600, tiq_test.rid(1));
select tiq_test.new_child(tiq_test.rid(1), 'deleg-1', 'c1', 8, tiq_test.rid(2));
select tiq_test.advance(9);
select ticketiq.take_over_child(tiq_test.rid(1), 1, tiq_test.rid(2), 'p1', 30);
select tiq_test.save_fingerprint();

select is_empty(
    $$select 1 from ticketiq.take_over_child(tiq_test.rid(1), 1, tiq_test.rid(2), 'p1', 30)$$,
    'the second take-over returns no row'
);
select is_empty(
    $$select 1 from ticketiq.take_over_child(tiq_test.rid(1), 1, tiq_test.rid(2), 'p9', 30)$$,
    'nor does one by another holder'
);
select is_empty($$select 1 from ticketiq.sweep_lapsed('leader')$$, 'a sweep finds nothing lapsed');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed: epoch 3, one loss');

select * from finish();
rollback;
