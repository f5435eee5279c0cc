-- renew_leases: a process whose run was lost and adopted back by the same
-- process lists the run twice, once per attempt: the stalled attempt's
-- entry (old epoch) must read held = false so that attempt stops (I12),
-- while the adopting attempt's entry is held.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.take_over(tiq_test.rid(1), 'p1');

create temp table renewed on commit drop as
select r.*
from ticketiq.renew_leases('p1', array[tiq_test.rid(1), tiq_test.rid(1)], array[1, 3]::bigint[], 8, 'run') as r;

select is((select count(*) from renewed), 2::bigint, 'one row per listed entry');
select is(
    (select r.held from renewed as r where r.epoch = 3), true,
    'the adopting attempt (epoch 3) holds the lease'
);
select is(
    (select r.held from renewed as r where r.epoch = 1), false,
    'the stalled attempt (epoch 1) does not'
);

select * from finish();
rollback;
