-- adopt_run: a held call's approval request comes back in calls
-- (approval_id), so the resume reads its decision instead of asking again.
begin;
select plan(1);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write'), tiq_test.call('r1', 'read'))
);
select ticketiq.request_approval(tiq_test.rid(1), 1, 1, 'w1');
select tiq_test.lose(tiq_test.rid(1));

select is(
    (
        select jsonb_path_query_array(a.calls, '$[*].approval_id')
        from ticketiq.adopt_run('p2', 8, tiq_test.rid(1)) as a
    ),
    jsonb_build_array(tiq_test.approval_id(tiq_test.rid(1), 'w1'), null),
    'w1 carries its approval id; the read none'
);

select * from finish();
rollback;
