-- purge_history: audit rows older than the age that belong to no run kept
-- (leader.* rows, rows of runs gone) go, at most p_limit a call; newer ones
-- and those of a run still kept stay.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.claim_leader('sweeper', 'p1', 8);
select tiq_test.new_run('p1', 864000, tiq_test.rid(1));
insert into ticketiq.audit (at, event, run_id, epoch, actor)
values (ticketiq.now(), 'agent.run.started', tiq_test.rid(99), 1, 'p9');
select tiq_test.advance(3600);
select ticketiq.claim_leader('sweeper', 'p2', 8);

select is(
    (select a.event from ticketiq.audit as a where a.run_id is null order by a.audit_id desc limit 1),
    'leader.claimed', 'a newer leader.claimed row is there'
);
select is((select p.audit_purged from ticketiq.purge_history(1800, 1) as p), 1, 'limit 1: one old row');
select is((select p.audit_purged from ticketiq.purge_history(1800, 1) as p), 1, 'then the other');
select is((select p.audit_purged from ticketiq.purge_history(1800, 1) as p), 0, 'then none');
select results_eq(
    $$select a.event, a.run_id, a.actor from ticketiq.audit as a order by a.audit_id$$,
    $$values ('agent.run.started'::text, tiq_test.rid(1), 'p1'::text), ('leader.claimed', null, 'p2')$$,
    'kept: the running run''s old row and the newer leader row'
);
select is(
    (select count(*)::integer from ticketiq.runs), 1, 'no run was touched'
);

select * from finish();
rollback;
