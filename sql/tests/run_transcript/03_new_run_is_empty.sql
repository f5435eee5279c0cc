-- run_transcript: a run that has written nothing yet reads as no rows (not
-- TQ001: the run exists).
begin;
select plan(1);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));

select is_empty($$select 1 from ticketiq.run_transcript(tiq_test.rid(1))$$, 'no rows');

select * from finish();
rollback;
