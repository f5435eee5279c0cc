-- record_outcome: every settlement other than made leaves the call settled.
-- A read has no calls row, so no settlement can be recorded for it (TQ008):
-- its settlement on a resume lives in the resume's audit row only.
begin;
select plan(11);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 1,
    jsonb_build_array(
        tiq_test.call('c1', 'read'), tiq_test.call('c2', 'write'), tiq_test.call('c3', 'write'),
        tiq_test.call('c4', 'write', 'incident-key'), tiq_test.call('c5', 'delegation'),
        tiq_test.call('c6', 'write'), tiq_test.call('c7', 'write'), tiq_test.call('c8', 'write'),
        tiq_test.call('c9', 'write')
    )
);
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, c.call_id)
from (values ('c2'), ('c3'), ('c4'), ('c5'), ('c6'), ('c7'), ('c9')) as c (call_id);

select throws_ok(
    $$select ticketiq.record_outcome(tiq_test.rid(1), 1, 1, 'c1', '{"n": 1}', 'redone')$$,
    'TQ008', null, 'the read c1 has no row to settle'
);
select results_eq(
    $$select o.call_id, o.state, o.settlement
      from (values ('c9', 'redone'), ('c2', 'coalesced'), ('c3', 'read_decision'), ('c4', 'resent_same_key'),
                   ('c5', 'asked_again'), ('c6', 'read_back'), ('c7', 'unknown'), ('c8', 'skipped'))
          as s (call_id, settlement)
      cross join lateral ticketiq.record_outcome(tiq_test.rid(1), 1, 1, s.call_id, '{"n": 1}', s.settlement) as o
      order by o.call_id$$,
    $$values ('c2'::text, 'settled'::text, 'coalesced'::text),
             ('c3', 'settled', 'read_decision'), ('c4', 'settled', 'resent_same_key'),
             ('c5', 'settled', 'asked_again'), ('c6', 'settled', 'read_back'),
             ('c7', 'settled', 'unknown'), ('c8', 'settled', 'skipped'), ('c9', 'settled', 'redone')$$,
    'each settlement returns state settled'
);
select is(
    (select c.state from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.call_id = 'c9'), 'settled',
    'redone call settled'
);
select is(
    (select c.state from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.call_id = 'c2'), 'settled',
    'coalesced approval settled'
);
select is(
    (select c.state from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.call_id = 'c4'), 'settled',
    'keyed write resent with the same key settled'
);
select is(
    (select c.state from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.call_id = 'c7'), 'settled',
    'unknown outcome settled'
);
select is(
    (select c.state from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.call_id = 'c8'), 'settled',
    'a call never marked can be skipped'
);
select is(
    (
        select count(*) from ticketiq.calls as c
        where c.run_id = tiq_test.rid(1) and c.finished_at is null
    ),
    0::bigint,
    'every call has finished_at'
);
select is(
    (select c.outcome from ticketiq.calls as c where c.run_id = tiq_test.rid(1) and c.call_id = 'c6'),
    '{"n": 1}'::jsonb,
    'the outcome read back is stored'
);
select is(
    (select count(*) from ticketiq.calls_in_doubt as d where d.run_id = tiq_test.rid(1)), 0::bigint,
    'nothing left in doubt'
);
select is(
    tiq_test.call_rows(tiq_test.rid(1), 1), array['c2', 'c3', 'c4', 'c5', 'c6', 'c7', 'c8', 'c9'],
    'the read c1 still has no row'
);

select * from finish();
rollback;
