-- accept_entry: a sender id over 512 characters (3,000 used to fail with
-- 54000, past the btree's row size; the limit is 512 bytes of UTF-8 since
-- migration 18) or an identity over 512 characters raises TQ004 naming the
-- argument and writes nothing; at the limits, in 4-byte characters too, the
-- entry is accepted and its run starts.
begin;
select plan(7);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.accept_entry('webhook', repeat('s', 3000), '{}', 'o', 'ra', 'web')$$,
    'TQ004', 'sender_id must be 1 to 512 bytes (UTF-8), got 3000', 'a sender id of 3,000 characters'
);
select throws_ok(
    $$select ticketiq.accept_entry('webhook', 's', '{}', repeat('o', 513), 'ra', 'web')$$,
    'TQ004', 'owner must be 1 to 512 characters, got 513', 'an owner of 513 characters'
);
select throws_ok(
    $$select ticketiq.accept_entry('webhook', 's', '{}', 'o', repeat('r', 513), 'web')$$,
    'TQ004', 'run_as must be 1 to 512 characters, got 513', 'a run_as of 513 characters'
);
select throws_ok(
    $$select ticketiq.accept_entry('webhook', 's', '{}', 'o', 'ra', repeat('c', 513))$$,
    'TQ004', 'channel must be 1 to 512 characters, got 513', 'a channel of 513 characters'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written');

select is(
    (
        select a.created
        from ticketiq.accept_entry(
            'ticket_event', repeat(U&'\+01F600', 128), '{}', repeat(U&'\+01F600', 512),
            repeat(U&'\+01F600', 512), repeat(U&'\+01F600', 512)
        ) as a
    ),
    true,
    'a sender id of 512 bytes (128 four-byte characters) and an identity of 512 four-byte characters are accepted'
);
select is(
    (select count(*) from ticketiq.claim_entries(repeat(U&'\+01F600', 512), 8)), 1::bigint,
    'and its run starts (idempotency key entry:<entry id>)'
);

select * from finish();
rollback;
