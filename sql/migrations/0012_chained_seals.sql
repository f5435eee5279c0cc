-- Migration 0012: the call rows a resume acts on are sealed, and each
-- checkpoint holds only what its step added, sealed as a link of a chain.
--
-- Each state of a changing call's row that a resume acts on (pending, in
-- doubt, finished with an outcome) carries the seal the runner made of it
-- (ticketiq_pg.seal.call_fields) and the id of its key, stored by the
-- statement that writes the state: ticketiq.write_checkpoint (pending, from
-- the body's call_seals), ticketiq.mark_in_doubt and ticketiq.record_outcome
-- (new arguments p_seal and p_seal_key_id, so their old signatures go).
-- A row written before this migration has no seal; its checkpoint does not
-- say sealed_calls, so a resume of a run in flight across the upgrade
-- accepts it as before.

-- A checkpoint is now a link (ticketiq_pg/runtime/chain.py): ticketiq.adopt_run
-- returns the run's chain, from its last base, in one more column.  A run in
-- flight keeps its full checkpoints; the first checkpoint after the upgrade
-- starts a chain from the full body (a base).
alter type ticketiq.adopted_run add attribute checkpoint_chain jsonb;

alter table ticketiq.calls add column seal text;
alter table ticketiq.calls add column seal_key_id text;

drop function if exists ticketiq.mark_in_doubt(uuid, bigint, integer, text, text);
drop function if exists ticketiq.record_outcome(uuid, bigint, integer, text, jsonb, text);

insert into ticketiq.schema_migrations (version, name) values (12, 'chained_seals');
