-- audit_once: the detail's own "key", if any, is replaced by p_key: the row
-- says which key it was written once for.
begin;
select plan(1);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
create temp table written on commit drop as
select o.*
from ticketiq.audit_once(
    tiq_test.rid(1), 1, 'agent.run.guarantee_downgraded', 'w1', '{"key": "other", "route": "mcp"}'
) as o;

select is(
    (select a.detail from ticketiq.audit as a where a.audit_id = (select w.audit_id from written as w)),
    '{"key": "w1", "route": "mcp"}'::jsonb,
    'detail.key is p_key'
);

select * from finish();
rollback;
