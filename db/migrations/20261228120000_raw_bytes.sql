-- migrate:up

-- The mailbox bytes of a message whose text copy is not them: bytes in a declared GB2312, GBK or
-- GB18030 charset from a binary column (raw holds their UTF-8 reading), and bytes PostgreSQL text
-- cannot hold (raw is NULL: a NUL byte, or an encoding msgx does not read). NULL for every other
-- message, whose raw text is the mailbox text byte for byte.
ALTER TABLE proc_state ADD COLUMN raw_bytes bytea;
ALTER TABLE proc_state_hst ADD COLUMN raw_bytes bytea;
-- The raw retention clears both copies.
DROP INDEX proc_state_hst_raw_kept;
CREATE INDEX proc_state_hst_raw_kept ON proc_state_hst (finished_at) WHERE raw IS NOT NULL OR raw_bytes IS NOT NULL;

-- migrate:down
DROP INDEX proc_state_hst_raw_kept;
CREATE INDEX proc_state_hst_raw_kept ON proc_state_hst (finished_at) WHERE raw IS NOT NULL;
ALTER TABLE proc_state_hst DROP COLUMN raw_bytes;
ALTER TABLE proc_state DROP COLUMN raw_bytes;
