-- mark_in_doubt: a call already settled without a mark (e.g. skipped by a
-- gate) cannot be marked afterwards (TQ007).
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write')));
select ticketiq.record_outcome(tiq_test.rid(1), 1, 1, 'w1', '{"refused": "containment"}', 'skipped');
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w1')$$,
    'TQ007', null, 'a skipped call is not marked'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');

select * from finish();
rollback;
