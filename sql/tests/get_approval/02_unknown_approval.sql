-- get_approval: an approval id that names no request raises TQ009
-- unknown_approval.
begin;
select plan(2);

select throws_ok(
    $$select * from ticketiq.get_approval('00000000-0000-0000-0000-00000000abcd')$$,
    'TQ009', null, 'unknown approval id'
);
select throws_ok(
    $$select * from ticketiq.get_approval(null)$$,
    'TQ009', null, 'null approval id'
);

select * from finish();
rollback;
