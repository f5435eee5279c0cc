-- send_signal: the limits fit the index of (run, name, sender key) however
-- the text is written (issue 46, finding 2).  A name of 200 and a sender key
-- of 512 four-byte characters that do not compress used to fail with 54000
-- (index row size); the sender key is limited to 512 bytes of UTF-8: past
-- it TQ004, nothing stored; at the limits the signal is stored.
begin;
select plan(3);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.send_signal(tiq_test.rid(1), tiq_test.wide_text(200, 'n'), '{}', tiq_test.wide_text(512, 'k'))$$,
    'TQ004', 'sender_key must be 1 to 512 bytes (UTF-8), got 2048', 'a sender key of 512 four-byte characters'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing stored');
select results_eq(
    $$select s.created from ticketiq.send_signal(tiq_test.rid(1), tiq_test.wide_text(200, 'n'), '{}',
        tiq_test.wide_text(128, 'k')) as s$$,
    $$values (true)$$, 'a name of 200 and a key of 128 four-byte characters (512 bytes): stored'
);

select * from finish();
rollback;
