-- Job leases (see store/migrations/0016_job_leases.sql): owner and expiry of the
-- claim on a job; the claim itself uses FOR UPDATE SKIP LOCKED.
ALTER TABLE jobs ADD COLUMN owner TEXT;
ALTER TABLE jobs ADD COLUMN lease_until TEXT;
