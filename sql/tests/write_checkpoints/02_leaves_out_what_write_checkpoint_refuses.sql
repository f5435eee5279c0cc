-- write_checkpoints: a checkpoint write_checkpoint would refuse (fenced
-- epoch, lapsed lease, step out of order, malformed body, empty seal,
-- unknown run, sealed answer, a run listed twice) is left out, with no row
-- and no write; the others in the same batch are written.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(n)) from generate_series(1, 8) as n;
select tiq_test.new_run('p1', 1, tiq_test.rid(9));
select tiq_test.checkpoint(tiq_test.rid(7), 1, 1);
select ticketiq.seal_answer(tiq_test.rid(7), 1, 2, '{"text": "done"}', 'a-seal', 'k1', 60);
select tiq_test.advance(2);  -- run 9's 1 s lease lapsed

create temp table written on commit drop as
select w.*
from ticketiq.write_checkpoints(
    array[tiq_test.rid(1), tiq_test.rid(2), tiq_test.rid(3), tiq_test.rid(4), tiq_test.rid(5),
          tiq_test.rid(6), tiq_test.rid(7), tiq_test.rid(8), tiq_test.rid(8), tiq_test.rid(9)],
    array[1, 2, 1, 1, 1, 1, 1, 1, 1, 1]::bigint[],
    array[1, 1, 2, 1, 1, 1, 3, 1, 1, 1],
    jsonb_build_array(
        tiq_test.body(), tiq_test.body(), tiq_test.body(), tiq_test.body() - 'history', tiq_test.body(),
        tiq_test.body(), tiq_test.body(), tiq_test.body(), tiq_test.body(), tiq_test.body()
    ),
    array['s', 's', 's', 's', '', 's', 's', 's', 's', 's'],
    array['k1', 'k1', 'k1', 'k1', 'k1', 'k1', 'k1', 'k1', 'k1', 'k1']
) as w;
-- 1: good; 2: fenced epoch; 3: step 2 before step 1; 4: no history; 5: empty seal;
-- 6: good; 7: step 3 after the answer sealed at step 2; 8: listed twice; 9: lease lapsed

select results_eq(
    $$select w.run_id from written as w$$,
    $$values (tiq_test.rid(1)), (tiq_test.rid(6))$$,
    'only the two good checkpoints come back'
);
select results_eq(
    $$select c.run_id, c.step::integer from ticketiq.checkpoints as c where c.written_at > '2030-01-01 00:00:00+00'
      order by c.run_id$$,
    $$values (tiq_test.rid(1), 1), (tiq_test.rid(6), 1)$$,
    'and only they are stored'
);
select results_eq(
    $$select r.run_id, r.last_step::integer from ticketiq.runs as r order by r.run_id$$,
    $$values (tiq_test.rid(1), 1), (tiq_test.rid(2), 0), (tiq_test.rid(3), 0), (tiq_test.rid(4), 0),
             (tiq_test.rid(5), 0), (tiq_test.rid(6), 1), (tiq_test.rid(7), 2), (tiq_test.rid(8), 0),
             (tiq_test.rid(9), 0)$$,
    'no other run moved on'
);
select is(
    (select count(*) from ticketiq.write_checkpoints(
        array['00000000-0000-0000-0000-0000000000ff'::uuid], array[1]::bigint[], array[1],
        jsonb_build_array(tiq_test.body()), array['s'], array['k1'])),
    0::bigint,
    'an unknown run: no row'
);

select * from finish();
rollback;
