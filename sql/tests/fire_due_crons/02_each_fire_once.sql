-- fire_due_crons: each fire happens once: calling again at the same time
-- fires nothing and writes no entry; at the next fire time it fires again,
-- as a new entry.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.upsert_cron_schedule('nightly', 3600, '{}', 'o', 'ra');
select ticketiq.fire_due_crons();

select is_empty($$select 1 from ticketiq.fire_due_crons()$$, 'called again at the same time: nothing fires');
select is((select count(*) from ticketiq.entries), 1::bigint, 'still one entry');

select tiq_test.advance(3600);
select results_eq(
    $$select f.name, f.fire_at from ticketiq.fire_due_crons() as f$$,
    $$values ('nightly'::text, '2030-01-01 01:00:00+00'::timestamptz)$$,
    'at the next fire time it fires again'
);
select results_eq(
    $$select split_part(e.sender_id, '@', 2)::timestamptz from ticketiq.entries as e order by e.entry_id$$,
    $$values ('2030-01-01 00:00:00+00'::timestamptz), ('2030-01-01 01:00:00+00')$$,
    'one entry per fire'
);

select * from finish();
rollback;
