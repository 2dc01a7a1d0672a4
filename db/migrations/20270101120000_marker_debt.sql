-- migrate:up

-- The marker debt of a batch (INV-8): the processor's terminal statement writes one row with the
-- batch's terminal msg_ids, and deletes it once its immediate marker wrote every one of them, so
-- a message whose marker is paid at once never gets a second proc_state version. A debt the
-- immediate marker did not pay in full moves onto its rows (backfill_next_at), where the backfill
-- sweep pays it row by row: the processor moves it when its marker write failed, the jobs stage
-- when the debt is older than the sweep's grace (a partial write, a processor gone meanwhile).
CREATE TABLE marker_debt (
    debt_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    ids bigint[] NOT NULL CHECK (cardinality(ids) > 0),
    finished_at timestamptz NOT NULL
);

-- Settled, for the archive: a terminal row with no debt of its own is settled too (its batch's
-- debt, while there is one, is checked by the archive itself).
DROP INDEX proc_state_settled;
CREATE INDEX proc_state_settled ON proc_state (finished_at)
 WHERE backfill_done_at IS NOT NULL OR backfill_abandoned_at IS NOT NULL
    OR (backfill_next_at IS NULL AND finished_at IS NOT NULL);

-- migrate:down
-- The code before this migration reads only the rows' own marker columns: a terminal row with no
-- debt of its own and none in a batch had its marker written with its batch (MARKED), and every
-- batch debt moves onto its rows.
UPDATE proc_state p SET backfill_done_at = p.finished_at, backfill_outcome = 'MARKED', backfill_attempts = p.backfill_attempts + 1
 WHERE p.status IN ('SUCCEEDED', 'SKIPPED', 'DEAD')
   AND p.backfill_next_at IS NULL AND p.backfill_done_at IS NULL AND p.backfill_abandoned_at IS NULL
   AND NOT EXISTS (SELECT 1 FROM marker_debt d WHERE p.msg_id = ANY (d.ids));
UPDATE proc_state_hst SET backfill_done_at = finished_at, backfill_outcome = 'MARKED', backfill_attempts = backfill_attempts + 1
 WHERE backfill_next_at IS NULL AND backfill_done_at IS NULL AND backfill_abandoned_at IS NULL;
UPDATE proc_state p SET backfill_next_at = d.finished_at
  FROM marker_debt d CROSS JOIN LATERAL unnest(d.ids) AS u(id)
 WHERE p.msg_id = u.id AND p.status IN ('SUCCEEDED', 'SKIPPED', 'DEAD')
   AND p.backfill_next_at IS NULL AND p.backfill_done_at IS NULL AND p.backfill_abandoned_at IS NULL;
DROP TABLE marker_debt;
DROP INDEX proc_state_settled;
CREATE INDEX proc_state_settled ON proc_state (finished_at)
 WHERE backfill_done_at IS NOT NULL OR backfill_abandoned_at IS NOT NULL;
