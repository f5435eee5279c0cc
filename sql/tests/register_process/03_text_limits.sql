-- register_process: a process id or host over 512 characters raises TQ004
-- naming it and writes nothing (3,000 used to fail with 54000); at 512 the
-- process is registered.
begin;
select plan(4);

select tiq_test.save_fingerprint();
select throws_ok(
    $$select ticketiq.register_process(repeat('p', 3000))$$,
    'TQ004', 'process_id must be 1 to 512 characters, got 3000', 'a process id of 3,000 characters'
);
select throws_ok(
    $$select ticketiq.register_process('p1', repeat('h', 513))$$,
    'TQ004', 'host must be at most 512 characters, got 513', 'a host of 513 characters'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written');
select is(
    (select r.process_id from ticketiq.register_process(repeat(U&'\+01F600', 512), repeat('h', 512)) as r),
    repeat(U&'\+01F600', 512),
    'a process id of 512 four-byte characters is registered'
);

select * from finish();
rollback;
