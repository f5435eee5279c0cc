-- record_resumes: each item is recorded as record_resume would record it (the
-- call settled, the resume's row complete, the transcript told), and comes
-- back with its place in the arrays.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.resumed_runs(2, 'write');

select results_eq(
    $$select r.item, r.run_id, r.step, r.loss_count from ticketiq.record_resumes(
        array[tiq_test.rid(2), tiq_test.rid(1)], array[3, 3]::bigint [],
        '[[{"call_id": "w1", "settlement": "unknown"}], [{"call_id": "w1", "settlement": "read_back", "outcome": {"id": 1}}]]'
    ) as r$$,
    $$values (1, tiq_test.rid(2), 1, 1), (2, tiq_test.rid(1), 1, 1)$$,
    'a row for each item, by its place in the arrays'
);
select results_eq(
    $$select c.run_id, c.state, c.settlement, c.finished_epoch from ticketiq.calls as c order by c.run_id$$,
    $$values (tiq_test.rid(1), 'settled'::text, 'read_back'::text, 3::bigint),
             (tiq_test.rid(2), 'settled', 'unknown', 3::bigint)$$,
    'each call is settled with its own item''s settlement'
);
select results_eq(
    $$select v.run_id, (a.detail ->> 'complete')::boolean, jsonb_array_length(v.settlements)
      from ticketiq.resume_audit as v join ticketiq.audit as a using (audit_id) order by v.run_id$$,
    $$values (tiq_test.rid(1), true, 1), (tiq_test.rid(2), true, 1)$$,
    'each resume''s row names its settlement and is complete'
);
select is(
    (select count(*)::integer from ticketiq.transcript_entries as t where t.kind = 'resumed'),
    2, 'each transcript is told once'
);

select * from finish();
rollback;
