-- ticketiq.schema_version(): the schema version this database is at.
--
-- The driver compares it with the versions it knows and refuses to work
-- against a schema it does not know (ticketiq_pg.errors.SchemaVersionMismatch).
-- SQLSTATEs: none.
create or replace function ticketiq.schema_version()
returns integer
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    return (select max(m.version) from ticketiq.schema_migrations as m);
end;
$$;

comment on function ticketiq.schema_version() is
'The highest migration applied to this database; the driver refuses versions it does not know.';
