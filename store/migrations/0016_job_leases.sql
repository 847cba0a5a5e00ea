-- Job leases: a job is claimed by one process (`owner`, unique per process) until
-- `lease_until` (ISO UTC text, sortable); the owner renews it while it works, and
-- any worker or replica may take the job over once the lease has run out (its
-- owner died or hangs). Progress (`done`) stays on the row, so the taker resumes.
ALTER TABLE jobs ADD COLUMN owner TEXT;
ALTER TABLE jobs ADD COLUMN lease_until TEXT;
