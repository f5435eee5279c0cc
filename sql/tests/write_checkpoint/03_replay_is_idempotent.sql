-- write_checkpoint: writing the same step again with the same epoch and seal
-- (a retried statement) returns the stored row, replayed, and changes nothing.
begin;
select plan(6);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('c1', 'write')));
select tiq_test.advance(3);
select tiq_test.save_fingerprint();

create temp table replay on commit drop as
select w.*
from ticketiq.write_checkpoint(
    tiq_test.rid(1), 1, 1, tiq_test.body(jsonb_build_array(tiq_test.call('c1', 'write'))), 'seal-1', 'k1'
) as w;

select is((select r.replayed from replay as r), true, 'replayed is true');
select is((select r.step from replay as r), 1, 'returns step 1');
select is(
    (select r.written_at from replay as r), '2030-01-01 00:00:00+00'::timestamptz,
    'returns the first written_at, not now'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'the replay changed nothing');
select is(
    (select count(*) from ticketiq.calls as c where c.run_id = tiq_test.rid(1)), 1::bigint,
    'no duplicate calls rows'
);
select is(
    (select r.last_step::integer from ticketiq.runs as r where r.run_id = tiq_test.rid(1)), 1,
    'last_step still 1'
);

select * from finish();
rollback;
