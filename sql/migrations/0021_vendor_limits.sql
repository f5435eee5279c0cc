-- Migration 0021: vendor limits shared by every process (issue 43).
--
--   * ticketiq.vendor_limits: per vendor, a rate (calls a second, with a
--     burst) and a concurrency (calls in flight), for all its calls or per
--     owner.  Written by the app at start (set_by 'app': an app's new
--     values replace its old ones) and by an operator (set_by 'operator':
--     the app's start no longer changes it), read at each take: a change
--     holds from the next call, without a restart.
--   * ticketiq.vendor_buckets: each bucket's tokens (for all, or for one
--     owner: scope ''), refilled by the database clock, and the time a
--     vendor asked every process to wait until (a 429 or 503 with
--     Retry-After: slowed_until).
--   * ticketiq.vendor_calls: the calls in flight under a concurrency,
--     each with the run's epoch: a call counts while its run is held at
--     that epoch, so a dead process's calls are given back when its runs
--     are claimed (the lease's detection time), with no row to clean first.

create table ticketiq.vendor_limits (
    vendor text primary key check (vendor ~ '^[a-z][a-z0-9_.-]{0,63}$') check (octet_length(vendor) <= 64),
    rate double precision check (rate is null or (rate > 0 and rate <= 1e6)),
    burst integer not null default 1 check (burst between 1 and 1000000),
    concurrency integer check (concurrency is null or concurrency between 1 and 100000),
    per text not null default 'all' check (per in ('all', 'owner')),
    set_by text not null check (set_by in ('app', 'operator')),
    updated_at timestamptz not null
);

create table ticketiq.vendor_buckets (
    vendor text not null references ticketiq.vendor_limits (vendor) on delete cascade
    check (octet_length(vendor) <= 64),
    -- '' (all the vendor's calls) or the owner's name (a limit per owner)
    scope text not null check (octet_length(scope) <= 512),
    tokens double precision not null,
    refilled_at timestamptz not null,
    slowed_until timestamptz,
    taken bigint not null default 0,
    waited bigint not null default 0,
    slowed bigint not null default 0,
    primary key (vendor, scope)
);

create table ticketiq.vendor_calls (
    run_id uuid not null,
    call_id text not null check (call_id <> '') check (char_length(call_id) <= 256),
    vendor text not null check (octet_length(vendor) <= 64),
    scope text not null check (octet_length(scope) <= 512),
    epoch bigint not null,
    taken_at timestamptz not null,
    primary key (run_id, call_id),
    foreign key (vendor, scope) references ticketiq.vendor_buckets (vendor, scope) on delete cascade
);

create index vendor_calls_bucket_idx on ticketiq.vendor_calls (vendor, scope);

comment on table ticketiq.vendor_limits is
'Per-vendor rate and concurrency limits shared by every process (issue 43); set by the app at start or by an operator.';
comment on table ticketiq.vendor_buckets is
'Each vendor bucket''s tokens, by the database clock, and the time a vendor asked every process to wait until.';
comment on table ticketiq.vendor_calls is
'Calls in flight under a vendor''s concurrency: each counts while its run is held at its epoch.';
