-- ticketiq.vendor_limit_figures(): each vendor's limits and each bucket's
-- figures, for operators and metrics.
--
-- One row per bucket (a vendor limited per owner has one per owner seen;
-- a vendor no call has taken from yet, one row with a null scope): the
-- limits, who set them, the tokens now (refilled to this moment), the
-- calls in flight that count, until when the vendor asked to wait, the
-- tokens taken, waits, slow-downs (a 429 or 503 met) and runs suspended
-- for a token counted since the bucket began, and the runs suspended for
-- one now (ticketiq.suspend_for_vendor; of a vendor limited per owner, the
-- bucket's owner's).
-- Limits: none.
-- SQLSTATEs: none.
create or replace function ticketiq.vendor_limit_figures()
returns table (
    vendor text,
    scope text,
    rate double precision,
    burst integer,
    concurrency integer,
    per text,
    set_by text,
    tokens double precision,
    in_flight integer,
    slowed_until timestamptz,
    taken bigint,
    waited bigint,
    slowed bigint,
    suspended bigint,
    waiting integer
)
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
#variable_conflict use_column
declare
    v_now timestamptz := ticketiq.now();
begin
    return query
    select
        l.vendor, b.scope, l.rate, l.burst, l.concurrency, l.per, l.set_by,
        case
            when b.vendor is null then l.burst::double precision
            when l.rate is null then l.burst::double precision
            else least(l.burst::double precision,
                b.tokens + l.rate * greatest(extract(epoch from v_now - b.refilled_at), 0))
        end,
        coalesce((
            select count(*)::integer
            from ticketiq.vendor_calls as c
            join ticketiq.runs as r on r.run_id = c.run_id and r.epoch = c.epoch and r.status = 'running'
            where c.vendor = l.vendor and c.scope = b.scope
        ), 0),
        b.slowed_until,
        coalesce(b.taken, 0),
        coalesce(b.waited, 0),
        coalesce(b.slowed, 0),
        coalesce(b.suspended, 0),
        coalesce((
            select count(*)::integer
            from ticketiq.runs as r
            where r.status = 'suspended' and r.wait_key = 'vendor:' || l.vendor
                and (l.per = 'all' or r.owner = b.scope)
        ), 0)
    from ticketiq.vendor_limits as l
    left join ticketiq.vendor_buckets as b on b.vendor = l.vendor
    order by l.vendor, b.scope;
end;
$$;

comment on function ticketiq.vendor_limit_figures() is
'Each vendor''s limits and each bucket''s tokens, calls in flight, wait-until, counts taken, waited, slowed and suspended, and runs suspended now.';
