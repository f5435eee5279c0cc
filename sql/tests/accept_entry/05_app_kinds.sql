-- accept_entry: a kind the app defined is accepted like a built-in one (no
-- list of names); a kind past the documented limit (65 characters, an
-- upper-case letter, a leading digit) raises TQ004 and writes nothing.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select is(
    (select a.created from ticketiq.accept_entry('billing.refund', 'r-1', '{}', 'o', 'ra', 'web') as a),
    true, 'an app kind is accepted'
);
select tiq_test.save_fingerprint();
select throws_ok(
    $$select ticketiq.accept_entry(repeat('k', 65), 's', '{}', 'o', 'ra', 'web')$$, 'TQ004', null,
    'a kind of 65 characters'
);
select throws_ok(
    $$select ticketiq.accept_entry('Refund', 's', '{}', 'o', 'ra', 'web')$$, 'TQ004', null, 'an upper-case kind'
);
select throws_ok(
    $$select ticketiq.accept_entry('1run', 's', '{}', 'o', 'ra', 'web')$$, 'TQ004', null, 'a leading digit'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written');

select * from finish();
rollback;
