-- get_answer: an unknown run raises TQ001.
begin;
select plan(1);

select throws_ok($$select * from ticketiq.get_answer(tiq_test.rid(9))$$, 'TQ001', null, 'unknown run');

select * from finish();
rollback;
