-- seal_answer: sealing closes the last step's calls like the next
-- checkpoint does: a changing call never marked in doubt as settled,
-- skipped; reads and calls marked in doubt as done, made.
begin;
select plan(1);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 1,
    jsonb_build_array(tiq_test.call('r1', 'read'), tiq_test.call('w1', 'write'), tiq_test.call('w2', 'write'))
);
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w2');
select ticketiq.seal_answer(tiq_test.rid(1), 1, 2, '{"text": "done"}', 'seal-a', 'k1', 60);

select results_eq(
    $$select c.call_id, c.state, c.settlement
      from ticketiq.calls as c where c.run_id = tiq_test.rid(1) order by c.ordinal$$,
    $$values ('r1'::text, 'done'::text, 'made'::text), ('w1', 'settled', 'skipped'), ('w2', 'done', 'made')$$,
    'the unmarked write is skipped; the read and the marked write are made'
);

select * from finish();
rollback;
