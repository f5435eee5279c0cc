-- purge_history: a finished run that still has its sealed answer is kept,
-- even past retain_until: answers go only through ticketiq.purge_answers;
-- once it took the answer, the run goes.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.seal_answer(tiq_test.rid(1), 1, 1, '{"text": "done"}', 's', 'k1', 86400 * 7);
select ticketiq.hand_on_answer(tiq_test.rid(1), 1);

select tiq_test.advance(86400 * 2);
select is(
    (select p.runs_purged from ticketiq.purge_history(86400) as p), 0,
    'kept while its answer is retained'
);
select tiq_test.advance(86400 * 6);
select is(
    (select p.runs_purged from ticketiq.purge_history(86400) as p), 0,
    'kept while its answer is there, even past retain_until'
);
select is(
    (select count(*)::integer from ticketiq.answers as a where a.run_id = tiq_test.rid(1)), 1,
    'the sealed answer is untouched'
);
select is(ticketiq.purge_answers(), 1, 'purge_answers takes the answer');
select is(
    (select p.runs_purged from ticketiq.purge_history(86400) as p), 1,
    'then the run goes'
);
select is((select count(*)::integer from ticketiq.runs), 0, 'no run left');

select * from finish();
rollback;
