-- start_run: a repeated idempotency key finds the existing run
-- (created = false, epoch and lease null: the caller is not its owner).
begin;
select plan(8);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');

create temp table first_start on commit drop as
select s.*
from ticketiq.start_run(
    'p1', 'o', 'ra', 'webhook', 'ticket_event', false, 8, '{}'::jsonb, null, 'delivery-1', '{}'::jsonb,
    tiq_test.rid(1)
) as s;

select tiq_test.advance(2);
select tiq_test.save_fingerprint();

create temp table second_start on commit drop as
select s.*
from ticketiq.start_run(
    'p2', 'o', 'ra', 'webhook', 'ticket_event', false, 8, '{}'::jsonb, null, 'delivery-1', '{}'::jsonb
) as s;

select is((select f.created from first_start as f), true, 'the first start creates the run');
select is((select s.run_id from second_start as s), tiq_test.rid(1), 'the retry returns the existing run id');
select is((select s.created from second_start as s), false, 'created is false');
select is((select s.epoch from second_start as s), null::bigint, 'epoch is null: the caller does not own the run');
select is((select s.lease_expires_at from second_start as s), null::timestamptz, 'no lease returned');
select is(
    (select s.correlation_id from second_start as s), tiq_test.rid(1)::text,
    'the existing correlation id is returned'
);
select is(
    (select count(*) from ticketiq.runs as r where r.idempotency_key = 'delivery-1'), 1::bigint,
    'still one run for the key'
);
select is(
    tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(),
    'the retry changed nothing (no second run, audit row or lease change)'
);

select * from finish();
rollback;
