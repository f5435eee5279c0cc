-- purge_answers: deletes the answers past retain_until whose runs finished,
-- and only those, at most p_limit of them; returns how many.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
-- 1: handed on, retention 60 s.        2: sealed, not handed on, 60 s.
-- 3: handed on, retention 1 h.         4 and 5: handed on, 30 s and 40 s.
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select ticketiq.seal_answer(tiq_test.rid(1), 1, 1, '{"n": 1}', 's1', 'k', 60);
select ticketiq.hand_on_answer(tiq_test.rid(1), 1);
select tiq_test.new_run('p1', 8, tiq_test.rid(2));
select ticketiq.seal_answer(tiq_test.rid(2), 1, 1, '{"n": 2}', 's2', 'k', 60);
select tiq_test.new_run('p1', 8, tiq_test.rid(3));
select ticketiq.seal_answer(tiq_test.rid(3), 1, 1, '{"n": 3}', 's3', 'k', 3600);
select ticketiq.hand_on_answer(tiq_test.rid(3), 1);
select tiq_test.new_run('p1', 8, tiq_test.rid(4));
select ticketiq.seal_answer(tiq_test.rid(4), 1, 1, '{"n": 4}', 's4', 'k', 30);
select ticketiq.hand_on_answer(tiq_test.rid(4), 1);
select tiq_test.new_run('p1', 8, tiq_test.rid(5));
select ticketiq.seal_answer(tiq_test.rid(5), 1, 1, '{"n": 5}', 's5', 'k', 40);
select ticketiq.hand_on_answer(tiq_test.rid(5), 1);

select is(ticketiq.purge_answers(), 0, 'nothing expired yet');
select tiq_test.advance(120);
select is(ticketiq.purge_answers(1), 1, 'limit 1 deletes one');
select is(
    (select array_agg(a.run_id order by a.run_id) from ticketiq.answers as a),
    array[tiq_test.rid(1), tiq_test.rid(2), tiq_test.rid(3), tiq_test.rid(5)],
    'the one whose retention ended first went'
);
select is(ticketiq.purge_answers(), 2, 'then the other expired answers of finished runs');
select is(
    (select array_agg(a.run_id order by a.run_id) from ticketiq.answers as a),
    array[tiq_test.rid(2), tiq_test.rid(3)],
    'kept: the answer of a run not finished, and the one still retained'
);
select throws_ok($$select ticketiq.purge_answers(0)$$, 'TQ004', null, 'limit 0 is refused');

select * from finish();
rollback;
