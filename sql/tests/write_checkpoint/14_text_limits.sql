-- write_checkpoint: a call_id over 256 characters in the body (3,000 used
-- to fail with 54000 in the calls index), a seal over 1024 or a seal key
-- id over 512 raises TQ004 naming it and writes nothing; at the limits the
-- checkpoint is written with its calls rows.
begin;
select plan(5);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.save_fingerprint();
select throws_ok(
    $$select ticketiq.write_checkpoint(tiq_test.rid(1), 1, 1,
        tiq_test.body(jsonb_build_array(tiq_test.call(repeat('c', 3000), 'write'))), 's', 'k1')$$,
    'TQ004', 'checkpoint.calls[0].call_id must be 1 to 256 characters', 'a call id of 3,000 characters'
);
select throws_ok(
    $$select ticketiq.write_checkpoint(tiq_test.rid(1), 1, 1, tiq_test.body(), repeat('s', 1025), 'k1')$$,
    'TQ004', 'seal must be 1 to 1024 characters, got 1025', 'a seal of 1025 characters'
);
select throws_ok(
    $$select ticketiq.write_checkpoint(tiq_test.rid(1), 1, 1, tiq_test.body(), 's', repeat('k', 513))$$,
    'TQ004', 'seal_key_id must be 1 to 512 characters, got 513', 'a seal key id of 513 characters'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written');
select ticketiq.write_checkpoint(
    tiq_test.rid(1), 1, 1,
    tiq_test.body(jsonb_build_array(tiq_test.call(repeat(U&'\+01F600', 256), 'write'))),
    repeat('s', 1024), repeat('k', 512)
);
select is(
    tiq_test.call_rows(tiq_test.rid(1), 1), array[repeat(U&'\+01F600', 256)],
    'a call id of 256 four-byte characters is written with its row'
);

select * from finish();
rollback;
