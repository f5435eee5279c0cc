-- mark_delivery: a run with no sealed answer has nothing to deliver: TQ007,
-- nothing written.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1);
select tiq_test.save_fingerprint();

select throws_ok($$select ticketiq.mark_delivery(tiq_test.rid(1), 1)$$, 'TQ007', null, 'no sealed answer');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written');

select * from finish();
rollback;
