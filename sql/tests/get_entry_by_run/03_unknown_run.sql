-- get_entry_by_run: a run id of no entry gives no row (and no error).
begin;
select plan(1);

select is_empty(
    $$select * from ticketiq.get_entry_by_run('00000000-0000-0000-0000-000000000001')$$, 'no row'
);

select * from finish();
rollback;
