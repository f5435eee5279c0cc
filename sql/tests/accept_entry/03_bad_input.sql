-- accept_entry: an unknown kind, an empty sender id, a payload that is not
-- a JSON object or an empty identity raises TQ004 and writes nothing.
begin;
select plan(14);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_entry('a2a', 'task-0');
select tiq_test.save_fingerprint();

select throws_ok(
    $$select ticketiq.accept_entry('E-mail', 's1', '{}', 'o', 'ra', 'web')$$, 'TQ004', null, 'a kind past the charset'
);
select throws_ok(
    $$select ticketiq.accept_entry(null, 's1', '{}', 'o', 'ra', 'web')$$, 'TQ004', null, 'a null kind'
);
select throws_ok(
    $$select ticketiq.accept_entry('a2a', '', '{}', 'o', 'ra', 'web')$$, 'TQ004', null, 'an empty sender id'
);
select throws_ok(
    $$select ticketiq.accept_entry('a2a', null, '{}', 'o', 'ra', 'web')$$, 'TQ004', null, 'a null sender id'
);
select throws_ok(
    $$select ticketiq.accept_entry('a2a', 's1', '[1, 2]', 'o', 'ra', 'web')$$, 'TQ004', null, 'a payload array'
);
select throws_ok(
    $$select ticketiq.accept_entry('a2a', 's1', '"text"', 'o', 'ra', 'web')$$, 'TQ004', null, 'a payload string'
);
select throws_ok(
    $$select ticketiq.accept_entry('a2a', 's1', null, 'o', 'ra', 'web')$$, 'TQ004', null, 'a null payload'
);
select throws_ok(
    $$select ticketiq.accept_entry('a2a', 's1', '{}', '', 'ra', 'web')$$, 'TQ004', null, 'an empty owner'
);
select throws_ok(
    $$select ticketiq.accept_entry('a2a', 's1', '{}', 'o', '', 'web')$$, 'TQ004', null, 'an empty run_as'
);
select throws_ok(
    $$select ticketiq.accept_entry('a2a', 's1', '{}', 'o', 'ra', null)$$, 'TQ004', null, 'a null channel'
);
select throws_ok(
    $$select ticketiq.accept_entry('a2a', 's1', '{}', 'o', 'ra', 'web', null)$$, 'TQ004', null, 'a null may_wait'
);
select throws_ok(
    $$select ticketiq.accept_entry('a2a', 's1', '{}', 'o', 'ra', 'web', false, null)$$, 'TQ004', null,
    'a null durable'
);
select throws_ok(
    $$select ticketiq.accept_entry('a2a', 'task-0', '[]', 'o', 'ra', 'web')$$, 'TQ004', null,
    'a bad payload even for a sender id already there'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing written');

select * from finish();
rollback;
