-- audit_once: once per run for its whole life, not per attempt: after the
-- run is taken over, the new epoch asking for the same (event, key) gets
-- the first row's audit_id with inserted = false and writes nothing; a new
-- key at the new epoch is written with that epoch and its new holder.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
create temp table first_write on commit drop as
select o.* from ticketiq.audit_once(tiq_test.rid(1), 1, 'agent.run.guarantee_downgraded', 'w1', '{}') as o;

select is(tiq_test.take_over(tiq_test.rid(1), 'p2'), 3::bigint, 'the run is taken over at epoch 3');
select tiq_test.save_fingerprint();
select results_eq(
    $$select o.audit_id, o.inserted
      from ticketiq.audit_once(tiq_test.rid(1), 3, 'agent.run.guarantee_downgraded', 'w1', '{}') as o$$,
    $$select f.audit_id, false from first_write as f$$,
    'the resumed attempt gets the first audit_id, inserted false'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'and writes nothing');
select is(
    (
        select o.inserted
        from ticketiq.audit_once(tiq_test.rid(1), 3, 'agent.run.guarantee_downgraded', 'w2', '{}') as o
    ),
    true,
    'a new key is audited'
);
select results_eq(
    $$select a.detail ->> 'key', a.epoch, a.actor from ticketiq.audit as a
      where a.event = 'agent.run.guarantee_downgraded' order by a.audit_id$$,
    $$values ('w1'::text, 1::bigint, 'p1'::text), ('w2', 3, 'p2')$$,
    'each row carries the epoch and holder that wrote it'
);

select * from finish();
rollback;
