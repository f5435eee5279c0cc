-- write_checkpoints: each checkpoint of the batch is written as
-- write_checkpoint writes it (the checkpoint row, a calls row per changing
-- call, last_step, the previous step's calls closed with their outcomes),
-- and a row comes back for each, with its place in the arrays.
begin;
select plan(7);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.new_run('p1', 8, tiq_test.rid(2));
-- run 2 is at step 1 with a write in doubt
select tiq_test.checkpoint(tiq_test.rid(2), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write', 'k-w1')));
select ticketiq.mark_in_doubt(tiq_test.rid(2), 1, 1, 'w1');
select tiq_test.advance(1);

create temp table written on commit drop as
select w.*
from ticketiq.write_checkpoints(
    array[tiq_test.rid(2), tiq_test.rid(1)],
    array[1, 1]::bigint[],
    array[2, 1],
    jsonb_build_array(
        tiq_test.body(jsonb_build_array(tiq_test.call('r2', 'read'))) || '{"outcomes": {"w1": {"id": 7}}}',
        tiq_test.body(jsonb_build_array(tiq_test.call('r1', 'read'), tiq_test.call('d1', 'delegation')))
    ),
    array['seal-b', 'seal-a'],
    array['k1', 'k1']
) as w;

select results_eq(
    $$select w.item, w.run_id, w.step, w.written_at, w.lease_expires_at, w.stop_requested
      from written as w$$,
    $$values (1, tiq_test.rid(2), 2, '2030-01-01 00:00:01+00'::timestamptz,
              '2030-01-01 00:00:08+00'::timestamptz, false),
             (2, tiq_test.rid(1), 1, '2030-01-01 00:00:01+00', '2030-01-01 00:00:08+00', false)$$,
    'a row per checkpoint written, by its place in the arrays, with the database clock and the lease'
);
select results_eq(
    $$select c.run_id, c.step::integer, c.epoch, c.seal::text from ticketiq.checkpoints as c
      where c.written_at = '2030-01-01 00:00:01+00' order by c.run_id$$,
    $$values (tiq_test.rid(1), 1, 1::bigint, 'seal-a'::text), (tiq_test.rid(2), 2, 1, 'seal-b')$$,
    'each checkpoint stored with its own step, epoch and seal'
);
select is(
    (select c.body -> 'calls' -> 1 ->> 'call_id' from ticketiq.checkpoints as c
     where c.run_id = tiq_test.rid(1) and c.step = 1),
    'd1', 'each body stored as given'
);
select is(tiq_test.call_rows(tiq_test.rid(1), 1), array['d1'], 'a calls row for the changing call only');
select is(tiq_test.call_rows(tiq_test.rid(2), 2), array[]::text[], 'none for a read');
select results_eq(
    $$select c.state, c.settlement, c.outcome from ticketiq.calls as c
      where c.run_id = tiq_test.rid(2) and c.call_id = 'w1'$$,
    $$values ('done'::text, 'made'::text, '{"id": 7}'::jsonb)$$,
    'the previous step''s call in doubt is closed as made, with its outcome'
);
select results_eq(
    $$select r.run_id, r.last_step::integer from ticketiq.runs as r order by r.run_id$$,
    $$values (tiq_test.rid(1), 1), (tiq_test.rid(2), 2)$$,
    'each run''s last step moved on'
);

select * from finish();
rollback;
