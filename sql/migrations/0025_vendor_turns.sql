-- Migration 0025: a run waiting for a vendor's token past a threshold
-- suspends and is woken at its turn (issue 43, item 2).
--
--   * vendor_buckets.next_turn: the time the next run that suspends for the
--     bucket is woken at (ticketiq.suspend_for_vendor): each suspension takes
--     the next turn and moves it one token later (1 / rate), so the runs that
--     suspended wake one a token apart, in the order they suspended, instead
--     of all at the moment the first token is back.
--   * vendor_buckets.suspended: the runs that suspended for the bucket, counted
--     since it began; ticketiq.vendor_limit_figures returns it and the runs
--     suspended for the vendor now (its result changes: dropped here, created
--     again from sql/functions).
alter table ticketiq.vendor_buckets
add column next_turn timestamptz,
add column suspended bigint not null default 0;

comment on column ticketiq.vendor_buckets.next_turn is
'When the next run that suspends for a token of this bucket is woken (ticketiq.suspend_for_vendor).';

drop function if exists ticketiq.vendor_limit_figures();

insert into ticketiq.schema_migrations (version, name) values (25, 'vendor_turns');
