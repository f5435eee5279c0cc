-- record_resumes: the same statement again (its commit went unseen) records
-- nothing twice: the same rows come back, each settlement is in its
-- resume's row once, the transcript told once.
begin;
select plan(3);

select tiq_test.resumed_runs(2, 'read');

create temp table first_time on commit drop as
select r.* from ticketiq.record_resumes(
    array[tiq_test.rid(1), tiq_test.rid(2)], array[3, 3]::bigint[],
    '[[{"call_id": "w1", "settlement": "redone"}], [{"call_id": "w1", "settlement": "redone"}]]'
) as r;

select results_eq(
    $$select r.* from ticketiq.record_resumes(
        array[tiq_test.rid(1), tiq_test.rid(2)], array[3, 3]::bigint [],
        '[[{"call_id": "w1", "settlement": "redone"}], [{"call_id": "w1", "settlement": "redone"}]]'
    ) as r$$,
    $$select f.* from first_time as f$$,
    'the same rows come back'
);
select results_eq(
    $$select v.run_id, jsonb_array_length(v.settlements) from ticketiq.resume_audit as v order by v.run_id$$,
    $$values (tiq_test.rid(1), 1), (tiq_test.rid(2), 1)$$,
    'each settlement recorded once'
);
select is(
    (select count(*)::integer from ticketiq.transcript_entries as t where t.kind = 'resumed'),
    2, 'each transcript told once'
);

select * from finish();
rollback;
