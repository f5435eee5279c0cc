-- mark_in_doubt: marking a call again changes nothing and returns the first
-- mark (already_marked, same marked_at).
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write')));
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w1');
select tiq_test.advance(3);
select tiq_test.save_fingerprint();

create temp table again on commit drop as
select m.* from ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w1', 'delegation') as m;

select is((select a.already_marked from again as a), true, 'already_marked is true');
select is(
    (select a.marked_at from again as a), '2030-01-01 00:00:00+00'::timestamptz,
    'returns the first marked_at'
);
select is((select a.marked_classification from again as a), 'write', 'and the first classification');
select is((select a.state from again as a), 'in_doubt', 'still in doubt');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'the second mark changed nothing');

select * from finish();
rollback;
