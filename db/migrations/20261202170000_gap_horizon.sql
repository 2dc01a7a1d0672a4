-- migrate:up
-- The highest mailbox id visible when the open gap was first seen: every missing id below it was
-- allocated before that moment, so it shares the gap's max-commit-delay window instead of
-- getting a new one when W reaches it.
ALTER TABLE inbox_cursor ADD COLUMN gap_horizon bigint;

-- migrate:down
ALTER TABLE inbox_cursor DROP COLUMN gap_horizon;
