-- Turn leases: a turn's claim on its conversation (`turn_id`, 0007) is held by one
-- process (`turn_owner`, unique per process), which renews `turn_until` while the turn
-- runs; a dead process's claim lapses a lease later. `turn_deadline` (ISO UTC text)
-- bounds renewals: no turn holds a conversation longer than that, whatever its
-- process does. Claims made before this migration have neither and keep their
-- `turn_until`. The index finds one process's claims (renewals, start-up) at once.
ALTER TABLE conversations ADD COLUMN turn_owner TEXT;
ALTER TABLE conversations ADD COLUMN turn_deadline TEXT;
CREATE INDEX conversations_turn_owner ON conversations(turn_owner) WHERE turn_owner IS NOT NULL;
