-- fork_source: the run and its checkpoints 1 to the step, in order; a step
-- it did not write is TQ004, an unknown run TQ001.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1);
select tiq_test.checkpoint(tiq_test.rid(1), 1, 2);
select tiq_test.checkpoint(tiq_test.rid(1), 1, 3);

select results_eq(
    $$select f.owner, f.entry_point, f.last_step,
        (select array_agg((e.value ->> 'step')::integer order by e.ordinality)
         from jsonb_array_elements(f.checkpoints) with ordinality as e),
        f.checkpoints -> 1 ->> 'seal'
      from ticketiq.fork_source(tiq_test.rid(1), 2) as f$$,
    $$values ('owner@example.com'::text, 'playground'::text, 3, array[1, 2], 'seal-2'::text)$$,
    'steps 1 to 2, in order, with their seals'
);
select throws_ok($$select * from ticketiq.fork_source(tiq_test.rid(1), 4)$$, 'TQ004', null, 'a step not written');
select throws_ok($$select * from ticketiq.fork_source(tiq_test.rid(1), 0)$$, 'TQ004', null, 'step 0');
select throws_ok($$select * from ticketiq.fork_source(tiq_test.rid(9), 1)$$, 'TQ001', null, 'an unknown run');

select * from finish();
rollback;
