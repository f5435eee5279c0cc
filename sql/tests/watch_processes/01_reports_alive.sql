-- watch_processes: reports each process holding its token as alive, with
-- the caller's session token (its backend pid and its own token's key);
-- processes without a token, stopped ones and dead ones nobody saw alive
-- are not reported and not touched.  A caller holding no token gets a
-- null session (nothing it lists as seen is honoured).
begin;
select plan(4);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select ticketiq.register_process('alive', 'h', 1);
select ticketiq.hold_liveness('alive');
select ticketiq.register_process('no-token', 'h', 2);
select tiq_test.dead_process('unseen');
select tiq_test.new_run('unseen', 8, tiq_test.rid(1));

select results_eq(
    $$select w.process_id, w.alive, w.session, w.runs_claimed from ticketiq.watch_processes('x') as w$$,
    $$values ('alive'::text, true, null::text, 0)$$,
    'a caller without a token: only the live process, and no session'
);
select tiq_test.watch_session('w');
select tiq_test.save_fingerprint();
select results_eq(
    $$select w.process_id, w.alive, w.session from ticketiq.watch_processes('w') as w$$,
    $$values ('alive'::text, true, tiq_test.watch_session('w')), ('w', true, tiq_test.watch_session('w'))$$,
    'the live processes, the caller among them, with its session'
);
select results_eq(
    $$select w.process_id, w.alive from ticketiq.watch_processes('w', tiq_test.watch_session('w'), '{}') as w$$,
    $$values ('alive'::text, true), ('w', true)$$,
    'a dead process not seen alive in this session is left to its lease'
);
select is(tiq_test.table_fingerprint(), tiq_test.saved_fingerprint(), 'nothing was written');

select pg_advisory_unlock_all();
select * from finish();
rollback;
