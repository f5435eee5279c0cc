-- adopt_run: approval_keyed says whether a call is sent under its approval's key:
-- a request filed before the call's mark keys it; one filed by a resume after the
-- mark (a later epoch) only gates a resend, and the call keeps its step key.
begin;
select plan(2);

select tiq_test.use_fake_clock('2030-01-01 00:00:00+00');
select tiq_test.new_run('p1', 8, tiq_test.rid(1));
select tiq_test.checkpoint(
    tiq_test.rid(1), 1, 1, jsonb_build_array(tiq_test.call('w1', 'write'), tiq_test.call('w2', 'write'))
);
select ticketiq.request_approval(tiq_test.rid(1), 1, 1, 'w1');
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w1', 'write');
select ticketiq.mark_in_doubt(tiq_test.rid(1), 1, 1, 'w2', 'write');
select tiq_test.lose(tiq_test.rid(1));

create temp table first_resume on commit drop as
select a.* from ticketiq.adopt_run('p2', 8, tiq_test.rid(1)) as a;
select ticketiq.request_approval(tiq_test.rid(1), (select a.epoch from first_resume as a), 1, 'w2');

select is(
    (select jsonb_path_query_array(a.calls, '$[*].approval_keyed') from first_resume as a),
    '[true, false]'::jsonb,
    'filed before its mark: keyed by the approval; not filed yet: not'
);

select tiq_test.lose(tiq_test.rid(1));
select is(
    (select jsonb_path_query_array(a.calls, '$[*].approval_keyed')
     from ticketiq.adopt_run('p3', 8, tiq_test.rid(1)) as a),
    '[true, false]'::jsonb,
    'a request the resume filed after the mark does not re-key the call'
);

select * from finish();
rollback;
