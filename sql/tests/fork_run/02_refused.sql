-- fork_run: refused, nothing changed: checkpoints that are not steps 1 to the
-- step (TQ004), a source step not the one verified (TQ007), a run id taken
-- (TQ007), an unknown source (TQ001), a key of another fork (TQ013).
begin;
select plan(7);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1);
select tiq_test.checkpoint(tiq_test.rid(1), 1, 2);
select ticketiq.start_run('p1', 'o', 'ra', 'web', 'run', false, 8, '{}', null, 'fork:taken', '{}', tiq_test.rid(2));

create temporary table good as
select jsonb_build_array(
    jsonb_build_object('step', 1, 'body', tiq_test.body(), 'seal', 'f1', 'seal_key_id', 'k1')
) as one;
select tiq_test.save_fingerprint();

select throws_ok(
    $$select * from ticketiq.fork_run(tiq_test.rid(1), 2, tiq_test.rid(7), 'alice', null, null, null,
        (select g.one from good as g), 'seal-2')$$,
    'TQ004', null, 'one checkpoint for a fork at step 2'
);
select throws_ok(
    $$select * from ticketiq.fork_run(tiq_test.rid(1), 1, tiq_test.rid(7), 'alice', null, null, null,
        '[{"step": 1, "body": {}, "seal": "f1", "seal_key_id": "k1"}]', 'seal-1')$$,
    'TQ004', null, 'a body that is not a checkpoint'
);
select throws_ok(
    $$select * from ticketiq.fork_run(tiq_test.rid(1), 1, tiq_test.rid(7), 'alice', null, null, null,
        (select g.one from good as g), 'another seal')$$,
    'TQ007', null, 'the source''s step is not the one verified'
);
select throws_ok(
    $$select * from ticketiq.fork_run(tiq_test.rid(1), 1, tiq_test.rid(2), 'alice', null, null, null,
        (select g.one from good as g), 'seal-1')$$,
    'TQ007', null, 'the run id is taken'
);
select throws_ok(
    $$select * from ticketiq.fork_run(tiq_test.rid(9), 1, tiq_test.rid(7), 'alice', null, null, null,
        (select g.one from good as g), 'seal-1')$$,
    'TQ001', null, 'an unknown source'
);
select throws_ok(
    $$select * from ticketiq.fork_run(tiq_test.rid(1), 1, tiq_test.rid(7), 'alice', null, null, 'fork:taken',
        (select g.one from good as g), 'seal-1')$$,
    'TQ013', null, 'a key another run holds'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing changed');

select * from finish();
rollback;
