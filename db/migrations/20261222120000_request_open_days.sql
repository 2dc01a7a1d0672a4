-- migrate:up

-- One open schedule request per operation day and sender (docs/requests.md): the key of the seed
-- design, (request type, operation day, sender). An open RQFD owns the days of its range that no
-- newer request took; a request that registers over owned days takes them (the older one is
-- narrowed, or superseded when it keeps none). Closing a request releases its days.
CREATE TABLE req_open_day (
    req_type      text   NOT NULL CHECK (req_type = 'RQFD'),
    sender        text   NOT NULL,
    operation_day date   NOT NULL,
    req_id        bigint NOT NULL REFERENCES req_track ON DELETE CASCADE,
    PRIMARY KEY (req_type, sender, operation_day)
);
CREATE INDEX req_open_day_req ON req_open_day (req_id);

-- The open requests of today own their days: the newest request of each day, the older ones
-- that keep no day are superseded.
INSERT INTO req_open_day (req_type, sender, operation_day, req_id)
SELECT DISTINCT ON (t.sender, d.day) 'RQFD', t.sender, d.day, t.req_id
  FROM req_track t, LATERAL (SELECT generate_series(t.scope_from, t.scope_to, interval '1 day')::date AS day) d
 WHERE t.req_type = 'RQFD' AND t.status IN ('REGISTERED', 'SENT', 'WAITING')
 ORDER BY t.sender, d.day, t.req_id DESC;
UPDATE req_track t SET status = 'EXPIRED', closed_at = now(), close_reason = 'superseded'
 WHERE t.req_type = 'RQFD' AND t.status IN ('REGISTERED', 'SENT', 'WAITING')
   AND NOT EXISTS (SELECT 1 FROM req_open_day d WHERE d.req_id = t.req_id);

-- One open reference-list request per list and sender; RQFD ranges are keyed by req_open_day.
DROP INDEX req_track_one_open;
CREATE UNIQUE INDEX req_track_one_open_list ON req_track (req_type, sender, scope)
    WHERE req_type = 'RQRD' AND status IN ('REGISTERED', 'SENT', 'WAITING');

-- How far the answer's DTTM lay before the request's sent time, within MSGX_REQUEST_CLOCK_SKEW
-- (NULL: not before it).
ALTER TABLE req_track ADD COLUMN match_skew interval CHECK (match_skew > interval '0');

-- migrate:down
ALTER TABLE req_track DROP COLUMN match_skew;
DROP INDEX req_track_one_open_list;
UPDATE req_track t SET status = 'EXPIRED', closed_at = now(), close_reason = 'superseded'
 WHERE t.status IN ('REGISTERED', 'SENT', 'WAITING')
   AND EXISTS (SELECT 1 FROM req_track n WHERE n.req_type = t.req_type AND n.scope = t.scope
                  AND n.status IN ('REGISTERED', 'SENT', 'WAITING') AND n.req_id > t.req_id);
CREATE UNIQUE INDEX req_track_one_open ON req_track (req_type, scope)
    WHERE status IN ('REGISTERED', 'SENT', 'WAITING');
DROP TABLE req_open_day;
