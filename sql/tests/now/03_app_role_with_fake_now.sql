-- now: ticketiq.now() is granted to ticketiq_app and ticketiq_operator (the
-- driver reads the lease clock with it).  A session of those roles that sets
-- ticketiq.fake_now must get the fake clock where it is allowed and the real
-- clock where it is not (the setting ignored), not a permission error.
begin;
select plan(4);

create function pg_temp.now_or_error() returns text
language plpgsql
as $$
begin
    return ticketiq.now()::text;
exception when others then
    return sqlstate || ': ' || sqlerrm;
end;
$$;

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
set local role ticketiq_app;
select lives_ok($$select ticketiq.now()$$, 'ticketiq_app calls now() with the fake clock set');
select is(
    pg_temp.now_or_error(), '2030-01-01 00:00:00+00'::timestamptz::text,
    'and gets the fake time, as the functions do'
);
reset role;

update ticketiq.config set fake_clock_allowed = false;
set local role ticketiq_operator;
select lives_ok(
    $$select ticketiq.now()$$,
    'ticketiq_operator calls now() with fake_now set where it is not allowed'
);
reset role;
set local role ticketiq_app;
select lives_ok(
    $$select ticketiq.now()$$,
    'so does ticketiq_app: the setting is ignored, not an error'
);
reset role;

select * from finish();
rollback;
