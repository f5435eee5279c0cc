-- purge_history: a run that finished (failed, stopped, or completed and its
-- sealed answer purged) longer ago than the age goes with everything kept for
-- it: checkpoints, calls, approval requests, transcript, inbox entry, audit.
begin;
select plan(10);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
-- 1: a write made and recorded, then failed.
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write', 'key-1')));
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w1');
select ticketiq.record_outcome(tiq_test.rid(1), 1, 1, 'w1', '{"ok": true}');
select ticketiq.fail_run(tiq_test.rid(1), 1, 'model refused');
-- 2: a write held for approval, then stopped.
select tiq_test.new_run('p1', 8, tiq_test.rid(2));
select tiq_test.checkpoint(tiq_test.rid(2), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write')));
select ticketiq.request_approval(tiq_test.rid(2), 1, 1, 'w1', '{"title": "close ticket"}');
select ticketiq.stop_run(tiq_test.rid(2), 1);
-- 3: an A2A entry's run, completed with its answer handed on (kept 60 s).
select tiq_test.entry_run('task-1', 'p1', 8);
select ticketiq.seal_answer(r.run_id, 1, 1, '{"text": "done"}', 's', 'k1', 60)
from ticketiq.runs as r where r.entry_point = 'a2a';
select ticketiq.hand_on_answer(r.run_id, 1) from ticketiq.runs as r where r.entry_point = 'a2a';

select tiq_test.advance(3600);
select is(ticketiq.purge_answers(), 1, 'purge_answers takes the sealed answer first');

select results_eq(
    $$select * from ticketiq.purge_history(1800)$$,
    $$values (3, 2, 2, 1, 3, 1, 8)$$,
    'counts: 3 runs, 2 checkpoints, 2 calls, 1 approval, 3 transcript entries, 1 entry, 8 audit rows'
);
select is((select count(*)::integer from ticketiq.runs), 0, 'the runs are gone');
select is((select count(*)::integer from ticketiq.checkpoints), 0, 'their checkpoints are gone');
select is((select count(*)::integer from ticketiq.calls), 0, 'their calls are gone');
select is((select count(*)::integer from ticketiq.approval_requests), 0, 'their approval requests are gone');
select is((select count(*)::integer from ticketiq.transcript_entries), 0, 'their transcripts are gone');
select is((select count(*)::integer from ticketiq.entries), 0, 'their inbox entry is gone');
select is((select count(*)::integer from ticketiq.audit), 0, 'their audit rows are gone');
select results_eq(
    $$select * from ticketiq.purge_history(1800)$$,
    $$values (0, 0, 0, 0, 0, 0, 0)$$,
    'a second call finds nothing'
);

select * from finish();
rollback;
