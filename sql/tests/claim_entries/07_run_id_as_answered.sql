-- claim_entries: the run started for an entry has the id accept_entry
-- answered when the entry was written.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select set_config(
    'tiq_test.planned',
    (select a.run_id::text from ticketiq.accept_entry('webhook', 'd-1', '{}', 'o', 'ra', 'web') as a), true
);
select is(
    (select c.run_id from ticketiq.claim_entries('p1', 8) as c),
    current_setting('tiq_test.planned')::uuid, 'the claimed run has the answered id'
);
select is(
    (select count(*) from ticketiq.runs as r where r.run_id = current_setting('tiq_test.planned')::uuid),
    1::bigint, 'the run exists under that id'
);

select * from finish();
rollback;
