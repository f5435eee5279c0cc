-- ticketiq.answers_write_once(): trigger that keeps sealed answers final.
--
-- A sealed answer never changes (I10).  The only updates allowed are the
-- one hand-on that sets handed_on_at/handed_on_epoch from null and the one
-- delivery mark that sets delivery_started_at from null; a delete is
-- allowed only once retain_until has passed (ticketiq.purge_answers).
-- Anything else raises TQ005 answer_sealed, whoever tries it.
create or replace function ticketiq.answers_write_once()
returns trigger
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
    if tg_op = 'DELETE' then
        if old.retain_until > ticketiq.now() then
            raise exception 'the sealed answer of run % is kept until %', old.run_id, old.retain_until
                using errcode = 'TQ005';
        end if;
        return old;
    end if;
    if new.run_id is distinct from old.run_id
        or new.step is distinct from old.step
        or new.epoch is distinct from old.epoch
        or new.body is distinct from old.body
        or new.seal is distinct from old.seal
        or new.seal_key_id is distinct from old.seal_key_id
        or new.sealed_at is distinct from old.sealed_at
        or new.retain_until is distinct from old.retain_until then
        raise exception 'the sealed answer of run % cannot be changed', old.run_id
            using errcode = 'TQ005';
    end if;
    if old.delivery_started_at is not null
        and new.delivery_started_at is distinct from old.delivery_started_at then
        raise exception 'the delivery of run % was already started', old.run_id
            using errcode = 'TQ005';
    end if;
    if old.handed_on_at is not null
        and (new.handed_on_at is distinct from old.handed_on_at
            or new.handed_on_epoch is distinct from old.handed_on_epoch) then
        raise exception 'the answer of run % was already handed on', old.run_id
            using errcode = 'TQ005';
    end if;
    return new;
end;
$$;

comment on function ticketiq.answers_write_once() is
'Trigger: a sealed answer is write-once; only the single hand-on may set handed_on_at; deletes wait for retain_until. TQ005.';

create or replace trigger answers_write_once
before update or delete on ticketiq.answers
for each row execute function ticketiq.answers_write_once();
