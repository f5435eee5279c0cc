-- record_resumes: a run listed twice is left out (no row, nothing recorded:
-- its caller sends each through record_resume); the others are recorded.
begin;
select plan(2);

select tiq_test.resumed_runs(2, 'read');

select results_eq(
    $$select r.item, r.run_id from ticketiq.record_resumes(
        array[tiq_test.rid(1), tiq_test.rid(2), tiq_test.rid(1)], array[3, 3, 3]::bigint [],
        '[[{"call_id": "w1", "settlement": "redone"}], [{"call_id": "w1", "settlement": "redone"}],
          [{"call_id": "w1", "settlement": "redone"}]]'
    ) as r$$,
    $$values (2, tiq_test.rid(2))$$,
    'only the run listed once comes back'
);
select results_eq(
    $$select v.run_id, jsonb_array_length(v.settlements) from ticketiq.resume_audit as v order by v.run_id$$,
    $$values (tiq_test.rid(1), 0), (tiq_test.rid(2), 1)$$,
    'and only its settlement is recorded'
);

select * from finish();
rollback;
