-- record_resumes: an item whose resumer ticketiq._fence would refuse (another
-- epoch, a run no longer running, a lapsed lease, an unknown run) is left
-- out, no row and nothing recorded (record_resume then gives it its error);
-- the others in the same statement are recorded.
begin;
select plan(2);

select tiq_test.resumed_runs(4, 'read');
select ticketiq.stop_run(tiq_test.rid(3), 3, 'alice');
update ticketiq.runs set lease_expires_at = ticketiq.now() - interval '1 second'
where run_id = tiq_test.rid(4);

select results_eq(
    $$select r.item, r.run_id from ticketiq.record_resumes(
        array[tiq_test.rid(1), tiq_test.rid(2), tiq_test.rid(3), tiq_test.rid(4),
              '00000000-0000-0000-0000-0000000000ff'::uuid],
        array[3, 2, 3, 3, 3]::bigint [],
        '[[{"call_id": "w1", "settlement": "redone"}], [{"call_id": "w1", "settlement": "redone"}],
          [{"call_id": "w1", "settlement": "redone"}], [{"call_id": "w1", "settlement": "redone"}],
          [{"call_id": "w1", "settlement": "redone"}]]'
    ) as r$$,
    $$values (1, tiq_test.rid(1))$$,
    'only the resumer the fence lets through comes back'
);
select results_eq(
    $$select v.run_id, jsonb_array_length(v.settlements) from ticketiq.resume_audit as v order by v.run_id$$,
    $$values (tiq_test.rid(1), 1), (tiq_test.rid(2), 0), (tiq_test.rid(3), 0), (tiq_test.rid(4), 0)$$,
    'and only its settlement is recorded'
);

select * from finish();
rollback;
