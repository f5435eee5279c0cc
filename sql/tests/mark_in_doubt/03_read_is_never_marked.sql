-- mark_in_doubt: a read is never marked in doubt (TQ004): a call the
-- checkpoint recorded as a read has no calls row, and marking it with no
-- classification or with 'read' neither marks nor records it.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('r1', 'read')));
select tiq_test.save_fingerprint();

select is(tiq_test.call_rows(tiq_test.rid(1), 1), array[]::text[], 'the read has no calls row');
select throws_ok(
    $$select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'r1')$$,
    'TQ004', 'call r1 is a read; reads are never marked in doubt', 'a read-classified call is refused'
);
select throws_ok(
    $$select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'r1', 'read')$$,
    'TQ004', 'call r1 is a read; reads are never marked in doubt', 'also when the tool is still a read now'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');
select is(tiq_test.call_rows(tiq_test.rid(1), 1), array[]::text[], 'the read still has no row');
select is(tiq_test.body_call_ids(tiq_test.rid(1), 1), array['r1'], 'the checkpoint still lists the read');

select * from finish();
rollback;
