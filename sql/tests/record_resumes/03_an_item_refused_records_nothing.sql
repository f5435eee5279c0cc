-- record_resumes: settlements record_resume would refuse raise their error
-- for the whole statement (a call the step does not have TQ008, a malformed
-- settlement TQ004), and nothing of the statement is recorded, the good
-- items neither.
begin;
select plan(3);

select tiq_test.resumed_runs(2, 'read');

select throws_ok(
    $$select * from ticketiq.record_resumes(
        array[tiq_test.rid(1), tiq_test.rid(2)], array[3, 3]::bigint [],
        '[[{"call_id": "w1", "settlement": "redone"}], [{"call_id": "w9", "settlement": "redone"}]]')$$,
    'TQ008', null, 'a call the step does not have'
);
select throws_ok(
    $$select * from ticketiq.record_resumes(
        array[tiq_test.rid(1)], array[3]::bigint [], '[[{"call_id": "w1", "settlement": "nope"}]]')$$,
    'TQ004', null, 'a malformed settlement'
);
select results_eq(
    $$select v.run_id, jsonb_array_length(v.settlements) from ticketiq.resume_audit as v order by v.run_id$$,
    $$values (tiq_test.rid(1), 0), (tiq_test.rid(2), 0)$$,
    'nothing recorded, the good item neither'
);

select * from finish();
rollback;
