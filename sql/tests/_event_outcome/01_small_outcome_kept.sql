-- _event_outcome: an outcome of at most 4096 bytes is carried whole, a JSON
-- null too.
begin;
select plan(3);

select is(ticketiq._event_outcome('{"ok": 1}'), '{"outcome": {"ok": 1}}'::jsonb, 'a small outcome');
select is(
    ticketiq._event_outcome(to_jsonb(repeat('x', 4000))),
    jsonb_build_object('outcome', repeat('x', 4000)),
    'a text outcome near the limit'
);
select is(ticketiq._event_outcome('null'), '{"outcome": null}'::jsonb, 'a JSON null: carried');

select * from finish();
rollback;
