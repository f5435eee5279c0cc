-- _resume_opened: a run up for adoption after a loss (its lease lapsed, no
-- reason recorded, or its holder's session ended) is crash_resumed; the
-- detail names the step, the losses, the reason, the settlements and
-- whether the resume is complete.
begin;
select plan(3);

select is(
    (select o.o_event from ticketiq._resume_opened(null, 3, 1, '[]', false) as o),
    'agent.run.crash_resumed', 'no reason: the lease lapsed'
);
select is(
    (select o.o_event from ticketiq._resume_opened('session_ended', 3, 1, '[]', false) as o),
    'agent.run.crash_resumed', 'the holder''s session ended'
);
select is(
    (select o.o_detail from ticketiq._resume_opened(null, 3, 2, '[{"call_id": "c1"}]', true) as o),
    '{"step": 3, "loss_count": 2, "reason": "lease_lapsed",
      "settlements": [{"call_id": "c1"}], "complete": true}'::jsonb,
    'the detail, the reason filled in'
);

select * from finish();
rollback;
