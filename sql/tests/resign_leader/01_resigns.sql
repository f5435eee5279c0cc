-- resign_leader: the holder gives the lease up at once (leader.resigned
-- audited) so another process claims it without waiting for the lapse.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.claim_leader('sweep', 'p1', 10);
select tiq_test.save_fingerprint();

select is(ticketiq.resign_leader('sweep', 'p2'), false, 'a process that does not hold it cannot resign it');
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'and changes nothing');

select tiq_test.advance(1);
select is(ticketiq.resign_leader('sweep', 'p1'), true, 'the holder resigns');
select results_eq(
    $$select a.event, a.actor, a.epoch, a.detail ->> 'name'
      from ticketiq.audit as a where a.event = 'leader.resigned'$$,
    $$values ('leader.resigned'::text, 'p1'::text, 1::bigint, 'sweep'::text)$$,
    'leader.resigned audited'
);
select is(
    (select c.is_leader from ticketiq.claim_leader('sweep', 'p2', 10) as c), true,
    'another process claims it at once, long before the lapse'
);
select is(ticketiq.resign_leader('sweep', 'p1'), false, 'resigning again does nothing');

select * from finish();
rollback;
