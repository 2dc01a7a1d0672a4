-- migrate:up

-- The dispatcher leader's report of its sends, one row per target (pkg/dispatch, Reporter):
-- since when its sends to Kafka have been blocked or failing (NULL: they are not), why, the
-- brokers concerned (brokers_silent: those that did not answer a metadata request; else the
-- bootstrap list) and its last acknowledged send. Written on a change and refreshed every
-- report_every, under the writer's lease (epoch); the operators' status reads it to name a
-- frozen or unreachable broker (pkg/status).
CREATE TABLE dispatch_send (
    target text PRIMARY KEY CHECK (target IN ('KAFKA:msg', 'KAFKA:schd')),
    topic text NOT NULL,
    epoch bigint NOT NULL,
    blocked_since timestamptz,
    error_class text,
    error text,
    brokers text[] NOT NULL DEFAULT '{}',
    brokers_silent boolean NOT NULL DEFAULT false,
    last_sent_at timestamptz,
    stall_after interval NOT NULL,
    report_every interval NOT NULL,
    reported_at timestamptz NOT NULL,
    CHECK ((blocked_since IS NULL) = (error_class IS NULL))
);

-- migrate:down

DROP TABLE dispatch_send;
