-- adopt_run: a held call's approval request comes back in calls
-- (approval_id), so the resume reads its decision instead of asking again.
-- A read has no row, so it is not in calls.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 1,
    jsonb_build_array(tiq_test.call('w1', 'write'), tiq_test.call('r1', 'read'), tiq_test.call('w2', 'write'))
);
select ticketiq.request_approval(tiq_test.rid(1), 1, 1, 'w1');
select tiq_test.lose(tiq_test.rid(1));

create temp table adopted on commit drop as
select a.* from ticketiq.adopt_run('p2', 8, tiq_test.rid(1)) as a;

select is(
    (select jsonb_path_query_array(a.calls, '$[*].approval_id') from adopted as a),
    jsonb_build_array(tiq_test.approval_id(tiq_test.rid(1), 'w1'), null),
    'w1 carries its approval id; w2 none'
);
select is(
    (select jsonb_path_query_array(a.calls, '$[*].call_id') from adopted as a), '["w1", "w2"]'::jsonb,
    'the read is not listed'
);

select * from finish();
rollback;
