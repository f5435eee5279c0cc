-- Migration 0007: group commit.
--
-- New functions only (sql/functions/ is applied after the migrations):
-- ticketiq.write_checkpoints writes the checkpoints of several runs in one
-- statement, and ticketiq._checkpoint_ok is the one definition of a valid
-- checkpoint body, cheap enough to test every body of such a statement.
-- The version moves so that a driver that sends write_checkpoints refuses
-- a database that does not have it yet.
insert into ticketiq.schema_migrations (version, name) values (7, 'group_commit');
