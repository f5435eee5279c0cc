-- accept_entry: the limits fit the index of (kind, owner, sender id) however
-- the text is written (issue 46, finding 2).  A sender id of 512 and an
-- owner of 512 four-byte characters that do not compress used to fail with
-- 54000 (index row size); the sender id is limited to 512 bytes of UTF-8:
-- past it TQ004, nothing written; at the limits the entry is accepted.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.accept_entry('ticket_event', tiq_test.wide_text(512, 's'), '{}', tiq_test.wide_text(512, 'o'),
        'ra', 'web')$$,
    'TQ004', 'sender_id must be 1 to 512 bytes (UTF-8), got 2048', 'a sender id of 512 four-byte characters'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written');
select results_eq(
    $$select a.created from ticketiq.accept_entry(repeat('k', 64), tiq_test.wide_text(128, 's'), '{}',
        tiq_test.wide_text(512, 'o'), 'ra', 'web') as a$$,
    $$values (true)$$, 'a kind of 64, a sender id of 512 bytes, an owner of 512 four-byte characters: accepted'
);

select * from finish();
rollback;
