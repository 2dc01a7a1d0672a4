-- migrate:up

-- Which database role holds which leader_lease row (pkg/roles fills it: `msgx roles apply`).
CREATE TABLE leader_lease_member (
    db_role name PRIMARY KEY,
    role    text NOT NULL CHECK (role IN ('ingest', 'processor', 'dispatcher', 'jobs'))
);

-- A binary may insert or update only its own leadership row, so one role's credentials cannot
-- bump (fence) another role's epoch. Everyone with SELECT reads every row (msgxctl status).
-- Lease.Check reads its row FOR SHARE, which is checked against the UPDATE policy: its own row
-- passes. The table owner (the migration role) and superusers are not subject to these policies.
ALTER TABLE leader_lease ENABLE ROW LEVEL SECURITY;
CREATE POLICY leader_lease_read ON leader_lease FOR SELECT USING (true);
CREATE POLICY leader_lease_insert_own ON leader_lease FOR INSERT
    WITH CHECK (role = (SELECT m.role FROM leader_lease_member m WHERE m.db_role = current_user));
CREATE POLICY leader_lease_update_own ON leader_lease FOR UPDATE
    USING (role = (SELECT m.role FROM leader_lease_member m WHERE m.db_role = current_user))
    WITH CHECK (role = (SELECT m.role FROM leader_lease_member m WHERE m.db_role = current_user));

-- migrate:down
DROP POLICY leader_lease_update_own ON leader_lease;
DROP POLICY leader_lease_insert_own ON leader_lease;
DROP POLICY leader_lease_read ON leader_lease;
ALTER TABLE leader_lease DISABLE ROW LEVEL SECURITY;
DROP TABLE leader_lease_member;
