-- record_resume: fenced (I1): only the adopting attempt records its resume.
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.take_over(tiq_test.rid(1), 'p2');
select tiq_test.save_fingerprint();

select throws_ok($$select ticketiq.record_resume(tiq_test.rid(99), 1, '[]')$$, 'TQ001', null, 'unknown run');
select throws_ok(
    $$select ticketiq.record_resume(tiq_test.rid(1), 1, '[]')$$, 'TQ002', null, 'the lost attempt''s epoch'
);
select tiq_test.advance(8);
select throws_ok(
    $$select ticketiq.record_resume(tiq_test.rid(1), 3, '[]')$$, 'TQ003', null, 'the adopter''s lease lapsed'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing recorded');

select * from finish();
rollback;
