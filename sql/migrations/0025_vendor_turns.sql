-- Migration 0025: a run waiting for a vendor's token past a threshold
-- suspends and is woken at its turn (issue 43, item 2).
--
--   * ticketiq.vendor_turns: the token a run was given when it suspended
--     for one (ticketiq.suspend_for_vendor takes it from the bucket then,
--     which may leave the bucket owing tokens: the calls after it wait
--     longer), with the time the bucket has paid it back: its turn.  The
--     run's timer wakes it then, and its call's next take
--     (ticketiq.take_vendor_token) is granted with that token, nothing more
--     taken; the row goes with it.  A turn never used (the run ended first)
--     goes with its run.
--   * vendor_buckets.granted_at: when the bucket last granted a token.  A
--     kept token is granted no sooner than a token's time (1 / rate) after
--     it: runs woken together (their timers fired in one pass, adopted
--     late) send their kept tokens a token apart, never bunched.
--   * vendor_buckets.suspended: the runs that suspended for the bucket,
--     counted since it began; ticketiq.vendor_limit_figures returns it and
--     the runs suspended for the vendor now (its result changes: dropped
--     here, created again from sql/functions).
create table ticketiq.vendor_turns (
    run_id uuid not null references ticketiq.runs (run_id) on delete cascade,
    call_id text not null check (call_id <> '') check (char_length(call_id) <= 256),
    vendor text not null references ticketiq.vendor_limits (vendor) on delete cascade
    check (octet_length(vendor) <= 64),
    due_at timestamptz not null,
    primary key (run_id, call_id)
);

comment on table ticketiq.vendor_turns is
'A token given to a run that suspended for it (ticketiq.suspend_for_vendor), usable from due_at by its call''s next take.';

alter table ticketiq.vendor_buckets
add column granted_at timestamptz,
add column suspended bigint not null default 0;

drop function if exists ticketiq.vendor_limit_figures();

insert into ticketiq.schema_migrations (version, name) values (25, 'vendor_turns');
