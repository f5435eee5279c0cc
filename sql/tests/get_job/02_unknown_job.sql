-- get_job: an unknown job id raises TQ010 (unknown_job), as does a null one.
begin;
select plan(2);

select throws_ok($$select ticketiq.get_job(tiq_test.rid(99))$$, 'TQ010', null, 'an unknown job');
select throws_ok($$select ticketiq.get_job(null)$$, 'TQ010', null, 'a null job id');

select * from finish();
rollback;
