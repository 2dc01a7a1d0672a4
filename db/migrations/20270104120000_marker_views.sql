-- migrate:up

-- The one definition of "a marker is owed" (INV-8c) and of "a marker was abandoned"; every
-- count, gauge and age of them reads these views. Each branch reads through a partial index
-- (proc_state_marker_owed, proc_state_marker_abandoned, proc_state_hst_marker_abandoned) or the
-- few debts still within the jobs stage's grace, so they cost the same with any history.
--
-- Owed: a terminal row that owes its marker on its own (backfill_next_at), or one named by a
-- batch's debt (marker_debt) that is still terminal and owes nothing on its own: a row replayed
-- since (open again) owes nothing, and a row in two debts (replayed and finished again) is one
-- marker owed, since its oldest debt. A debt the immediate marker wrote in part still names the
-- rows it marked: they count until the jobs stage moves the debt onto the rows.
CREATE VIEW marker_owed AS
SELECT msg_id, finished_at AS owed_since, false AS in_batch
  FROM proc_state
 WHERE backfill_next_at IS NOT NULL AND backfill_done_at IS NULL AND backfill_abandoned_at IS NULL
UNION ALL
SELECT p.msg_id, min(d.finished_at), true
  FROM marker_debt d
 CROSS JOIN LATERAL unnest(d.ids) AS u(id)
  JOIN proc_state p ON p.msg_id = u.id
 WHERE p.status IN ('SUCCEEDED', 'SKIPPED', 'DEAD')
   AND p.backfill_next_at IS NULL AND p.backfill_done_at IS NULL AND p.backfill_abandoned_at IS NULL
 GROUP BY p.msg_id;

-- Abandoned: a marker the sweep gave up on, awaiting reconciliation (msgxctl backfill), live or
-- archived (the archive keeps such a row until it is retried).
CREATE VIEW marker_abandoned AS
SELECT msg_id, backfill_abandoned_at AS abandoned_at, false AS archived
  FROM proc_state WHERE backfill_abandoned_at IS NOT NULL AND backfill_done_at IS NULL
UNION ALL
SELECT msg_id, backfill_abandoned_at, true
  FROM proc_state_hst WHERE backfill_abandoned_at IS NOT NULL AND backfill_done_at IS NULL;

-- migrate:down

DROP VIEW marker_abandoned;
DROP VIEW marker_owed;
