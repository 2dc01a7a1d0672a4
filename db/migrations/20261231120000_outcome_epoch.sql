-- migrate:up

-- The processor leader's epoch of a SUCCEEDED or SKIPPED outcome whose attempt row is not written
-- to msg_attempt: a message that succeeds or is skipped at its first attempt (almost every
-- message) keeps its whole history in its proc_state row, and Attempts reads the last attempt from
-- it (status, finished_at, this epoch, class, reason). NULL: every attempt of the row is in
-- msg_attempt (rows finished before this column, failures, DEAD, decode failures with their META).
-- A replay writes the row's attempt to msg_attempt before it requeues the row.
ALTER TABLE proc_state ADD COLUMN outcome_epoch bigint;
ALTER TABLE proc_state_hst ADD COLUMN outcome_epoch bigint;

-- migrate:down
-- Materialise the attempts kept on the rows, then drop the column.
INSERT INTO msg_attempt (msg_id, attempt, at, epoch, outcome, error_class, reason)
SELECT msg_id, attempts, finished_at, outcome_epoch, status, error_class, reason FROM proc_state WHERE outcome_epoch IS NOT NULL
UNION ALL
SELECT msg_id, attempts, finished_at, outcome_epoch, status, error_class, reason FROM proc_state_hst WHERE outcome_epoch IS NOT NULL;
ALTER TABLE proc_state_hst DROP COLUMN outcome_epoch;
ALTER TABLE proc_state DROP COLUMN outcome_epoch;
