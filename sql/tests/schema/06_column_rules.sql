-- schema: the one-column rules of runs and checkpoints are held by domains
-- (migration 8), so an update of one column checks that column alone; each
-- rule still refuses a bad value with 23514 (check_violation) and writes
-- nothing, whether the value is inserted or assigned later; the rules
-- between columns stay on the table; the operator views show the columns
-- as their base types; checkpoint bodies are compressed with lz4 where the
-- server has it.
begin;
select plan(22);

select is(
    (
        select count(*) from pg_catalog.pg_constraint as c
        where c.conrelid in ('ticketiq.runs'::regclass, 'ticketiq.checkpoints'::regclass)
            and c.contype = 'c' and cardinality(c.conkey) = 1
    ),
    0::bigint,
    'no one-column CHECK constraint on runs or checkpoints: every update would pay for each'
);
select is(
    (
        select count(*) from pg_catalog.pg_constraint as c
        where c.conrelid = 'ticketiq.runs'::regclass and c.contype = 'c'
    ),
    4::bigint,
    'runs keeps its four rules between columns'
);
select results_eq(
    $$select a.attname::text collate "default", format_type(a.atttypid, a.atttypmod)
      from pg_catalog.pg_attribute as a
      where a.attrelid = 'ticketiq.runs'::regclass
        and a.attname in ('owner', 'meta', 'status', 'epoch', 'loss_count', 'last_step')
      order by a.attnum$$,
    $$values ('owner', 'ticketiq.nonempty_text'), ('meta', 'ticketiq.json_object'),
        ('status', 'ticketiq.run_status'), ('epoch', 'ticketiq.epoch_number'),
        ('loss_count', 'ticketiq.count_number'), ('last_step', 'ticketiq.count_number')$$,
    'the runs columns with a rule of their own are of its domain'
);

select tiq_test.new_run('p1', 8, tiq_test.rid(1));
create temp table before_rules as
select r.* from ticketiq.runs as r where r.run_id = tiq_test.rid(1);

select throws_ok(
    $$insert into ticketiq.runs (run_id, owner, run_as, channel, entry_point, correlation_id,
        status, lease_holder, lease_expires_at, created_at, updated_at)
      values (tiq_test.rid(2), '', 'a', 'c', 'e', 'x', 'running', 'p1', now() + interval '8 s',
        now(), now())$$,
    '23514', null, 'an empty owner is refused on insert'
);
select throws_ok(
    $$update ticketiq.runs set run_as = '' where run_id = tiq_test.rid(1)$$,
    '23514', null, 'an empty run_as is refused on update'
);
select throws_ok(
    $$update ticketiq.runs set channel = '' where run_id = tiq_test.rid(1)$$,
    '23514', null, 'an empty channel is refused'
);
select throws_ok(
    $$update ticketiq.runs set entry_point = '' where run_id = tiq_test.rid(1)$$,
    '23514', null, 'an empty entry_point is refused'
);
select throws_ok(
    $$update ticketiq.runs set correlation_id = '' where run_id = tiq_test.rid(1)$$,
    '23514', null, 'an empty correlation_id is refused'
);
select throws_ok(
    $$update ticketiq.runs set meta = '[]' where run_id = tiq_test.rid(1)$$,
    '23514', null, 'meta that is not an object is refused'
);
select throws_ok(
    $$update ticketiq.runs set status = 'paused' where run_id = tiq_test.rid(1)$$,
    '23514', null, 'an unknown status is refused'
);
select throws_ok(
    $$update ticketiq.runs set epoch = 0 where run_id = tiq_test.rid(1)$$,
    '23514', null, 'epoch 0 is refused'
);
select throws_ok(
    $$update ticketiq.runs set loss_count = -1 where run_id = tiq_test.rid(1)$$,
    '23514', null, 'a negative loss count is refused'
);
select throws_ok(
    $$update ticketiq.runs set last_step = -1 where run_id = tiq_test.rid(1)$$,
    '23514', null, 'a negative last step is refused'
);
select throws_ok(
    $$update ticketiq.runs set status = 'completed' where run_id = tiq_test.rid(1)$$,
    '23514', null, 'a rule between columns still holds: completed needs finished_at, no lease'
);
select results_eq(
    $$select r.* from ticketiq.runs as r where r.run_id = tiq_test.rid(1)$$,
    $$select b.* from before_rules as b$$,
    'the run is as it was: nothing refused was written'
);
select is(
    (select count(*) from ticketiq.runs as r where r.run_id = tiq_test.rid(2)), 0::bigint,
    'the refused insert left no run'
);

select throws_ok(
    $$insert into ticketiq.checkpoints (run_id, step, epoch, body, seal, seal_key_id, written_at)
      values (tiq_test.rid(1), 0, 1, '{}', 's', 'k', now())$$,
    '23514', null, 'checkpoint step 0 is refused'
);
select throws_ok(
    $$insert into ticketiq.checkpoints (run_id, step, epoch, body, seal, seal_key_id, written_at)
      values (tiq_test.rid(1), 1, 1, '{}', '', 'k', now())$$,
    '23514', null, 'an empty seal is refused'
);
select throws_ok(
    $$insert into ticketiq.checkpoints (run_id, step, epoch, body, seal, seal_key_id, written_at)
      values (tiq_test.rid(1), 1, 1, '{}', 's', '', now())$$,
    '23514', null, 'an empty seal key id is refused'
);
select is(
    (select count(*) from ticketiq.checkpoints as c where c.run_id = tiq_test.rid(1)), 0::bigint,
    'no checkpoint was written'
);
select results_eq(
    $$select a.attname::text collate "default", format_type(a.atttypid, a.atttypmod)
      from pg_catalog.pg_attribute as a
      where a.attrelid = 'ticketiq.runs_in_flight'::regclass
        and a.attname in ('status', 'epoch', 'loss_count', 'last_step', 'owner')
      order by a.attnum$$,
    $$values ('status', 'text'), ('epoch', 'bigint'), ('loss_count', 'integer'),
        ('last_step', 'integer'), ('owner', 'text')$$,
    'runs_in_flight shows them as their base types'
);

select is(
    (
        select a.attcompression::text from pg_catalog.pg_attribute as a
        where a.attrelid = 'ticketiq.checkpoints'::regclass and a.attname = 'body'
    ),
    case
        when exists (
            select 1 from pg_catalog.pg_settings as s
            where s.name = 'default_toast_compression' and 'lz4' = any(s.enumvals)
        ) then 'l'
        else ''
    end,
    'checkpoint bodies are compressed with lz4 where the server has it'
);

select * from finish();
rollback;
