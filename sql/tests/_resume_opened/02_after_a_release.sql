-- _resume_opened: a run released gracefully (a shutdown, a deploy) or
-- woken from a wait is resumed, not crash_resumed, and its reason is kept.
begin;
select plan(2);

select is(
    (select o.o_event from ticketiq._resume_opened('shutdown', 1, 0, '[]', true) as o),
    'agent.run.resumed', 'a graceful release'
);
select is(
    (select o.o_detail ->> 'reason' from ticketiq._resume_opened('woken', 1, 0, '[]', true) as o),
    'woken', 'its reason kept'
);

select * from finish();
rollback;
