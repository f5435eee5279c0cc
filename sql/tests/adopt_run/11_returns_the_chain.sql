-- adopt_run: when the last checkpoint is a link (schema 12), checkpoint_chain
-- is the run's checkpoints from the chain's last base to the last step, in
-- step order, each {step, body, seal, seal_key_id}, in the same statement;
-- checkpoints before the base (written before the upgrade) are left out.  A
-- link removed shows as a missing step, a chain without its base starts at
-- step 1, and a last checkpoint written before schema 12 gives null: the
-- caller, which holds the keys, verifies the chain and refuses each case
-- (tests/test_checkpoint_chain.py).
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');

create function pg_temp.write(p_run uuid, p_step integer, p_chain text)
returns void
language sql
as $$
    select 1 from ticketiq.write_checkpoint(
        p_run, 1, p_step,
        tiq_test.body() || case when p_chain is null then '{}' else jsonb_build_object('chain', p_chain) end,
        'seal-' || p_step::text, 'k1'
    );
$$;

create function pg_temp.chain_of(p_run uuid)
returns jsonb
language sql
as $$
    select jsonb_path_query_array(a.checkpoint_chain, '$[*].step')
        || coalesce(jsonb_path_query_array(a.checkpoint_chain, '$[last].seal'), 'null')
    from ticketiq.adopt_run('p2', 8, p_run) as a;
$$;

-- a run in flight across the upgrade: step 1 full, step 2 a base, 3 and 4 links
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select pg_temp.write(tiq_test.rid(1), 1, null);
select pg_temp.write(tiq_test.rid(1), 2, 'base');
select pg_temp.write(tiq_test.rid(1), 3, 'link');
select pg_temp.write(tiq_test.rid(1), 4, 'link');
select tiq_test.lose(tiq_test.rid(1));
select is(pg_temp.chain_of(tiq_test.rid(1)), '[2, 3, 4, "seal-4"]'::jsonb,
    'the chain from its base to the last step, in order; the full checkpoint before it left out');

-- a chain of p_steps, step p_removed deleted, lost
create function pg_temp.removed(p_run uuid, p_steps integer, p_removed integer)
returns jsonb
language sql
as $$
    select tiq_test.new_run('p1', 8, p_run);
    select pg_temp.write(p_run, s.s, case when s.s = 1 then 'base' else 'link' end)
    from generate_series(1, p_steps) as s (s);
    delete from ticketiq.checkpoints as k where k.run_id = p_run and k.step = p_removed;
    select tiq_test.lose(p_run);
    select pg_temp.chain_of(p_run);
$$;

select is(pg_temp.removed(tiq_test.rid(2), 4, 2), '[1, 3, 4, "seal-4"]'::jsonb,
    'a removed link leaves its step out: the caller refuses the gap');
select is(pg_temp.removed(tiq_test.rid(3), 3, 1), '[2, 3, "seal-3"]'::jsonb,
    'without its base the chain starts at a link: the caller refuses it');

-- a last checkpoint written before schema 12: no chain
select tiq_test.new_run('p1', 8, tiq_test.rid(4));
select pg_temp.write(tiq_test.rid(4), 1, null);
select tiq_test.lose(tiq_test.rid(4));
select is(
    (select a.checkpoint_chain from ticketiq.adopt_run('p2', 8, tiq_test.rid(4)) as a), null,
    'a full checkpoint (before schema 12) has no chain: it is verified alone'
);

select * from finish();
rollback;
