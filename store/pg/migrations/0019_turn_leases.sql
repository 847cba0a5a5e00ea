-- Turn leases (see store/migrations/0019_turn_leases.sql): the process holding a
-- turn's claim, which renews `turn_until`, and the latest time a renewal may reach.
ALTER TABLE conversations ADD COLUMN turn_owner TEXT;
ALTER TABLE conversations ADD COLUMN turn_deadline TEXT;
CREATE INDEX conversations_turn_owner ON conversations(turn_owner) WHERE turn_owner IS NOT NULL;
