-- record_outcome: recording the same outcome again returns it, replayed,
-- and changes nothing.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write')));
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w1');
select ticketiq.record_outcome(tiq_test.rid(1), 1, 1, 'w1', '{"id": 7}', 'made');
select tiq_test.advance(4);
select tiq_test.save_fingerprint();

create temp table again on commit drop as
select o.* from ticketiq.record_outcome(tiq_test.rid(1), 1, 1, 'w1', '{"id": 7}', 'made') as o;

select is((select a.replayed from again as a), true, 'replayed is true');
select is(
    (select a.finished_at from again as a), '2030-01-01 00:00:00+00'::timestamptz,
    'returns the first finished_at'
);
select is((select a.state from again as a), 'done', 'state done');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'the replay changed nothing');

select * from finish();
rollback;
