-- write_checkpoints: arrays whose subscripts do not start at 1 (here
-- [2:3]) are read by position, as write_checkpoint would read each item:
-- the rows come back with each run's own id and step (item counts from 1),
-- and each run's calls rows are its own.  A two-dimensional array raises
-- TQ004 and writes nothing.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.new_run('p1', 8, tiq_test.rid(2));

select results_eq(
    $$select w.item, w.run_id, w.step
      from ticketiq.write_checkpoints(
          ('[2:3]={' || tiq_test.rid(1) || ',' || tiq_test.rid(2) || '}')::uuid[],
          '[5:6]={1,1}'::bigint[],
          '[0:1]={1,1}'::integer[],
          jsonb_build_array(
              tiq_test.body(jsonb_build_array(tiq_test.call('a1', 'write'))),
              tiq_test.body(jsonb_build_array(tiq_test.call('b1', 'write')))
          ),
          '[2:3]={seal-a,seal-b}'::text[],
          '[7:8]={k1,k1}'::text[]
      ) as w$$,
    $$values (1, tiq_test.rid(1), 1), (2, tiq_test.rid(2), 1)$$,
    'a row per checkpoint, each with its own run id'
);
select results_eq(
    $$select c.run_id, c.step::integer, c.seal::text from ticketiq.checkpoints as c order by c.run_id$$,
    $$values (tiq_test.rid(1), 1, 'seal-a'::text), (tiq_test.rid(2), 1, 'seal-b')$$,
    'each checkpoint written for its run'
);
select results_eq(
    $$select c.run_id, c.call_id from ticketiq.calls as c order by c.run_id$$,
    $$values (tiq_test.rid(1), 'a1'::text), (tiq_test.rid(2), 'b1')$$,
    'each run''s calls rows are its own'
);
select throws_ok(
    $$select * from ticketiq.write_checkpoints(array[[tiq_test.rid(1)]], array[[2]]::bigint[], array[[2]],
        jsonb_build_array(tiq_test.body()), array[['s']], array[['k1']])$$,
    'TQ004', null, 'two-dimensional arrays'
);

select * from finish();
rollback;
