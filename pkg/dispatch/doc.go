// Package dispatch is the dispatcher stage: it drains the msg_event outbox to Kafka while this
// instance leads the dispatcher role. Two loops run side by side, and a heartbeat beside them:
//
// KAFKA:msg → topic msgx.flight.changes (StepMsg, in a loop)
//
//	claim ≤ batch events ─────▶ produce (one batch, key = FLID) ──▶ per record:
//	   (oldest first; of each        acknowledged ──────────────▶ delivered (the cursor moves: one row per batch)
//	    FLID its due run from its    retryable error ───────────▶ PENDING, attempts+1,
//	    smallest unsent event_id)                                  next_attempt_at = now + backoff
//	                                  retryable, attempts = max ─▶ DEAD
//	                                  non-retryable (too large) ─▶ DEAD at once
//
// A claim takes of each FLID its run of due events from its head (its smallest unsent event) in
// event order, and a batch is one Kafka transaction, all or none (the Sender contract), so a
// record can never overtake an unacknowledged predecessor in Kafka, whatever the producer's
// retries do. A failure counts against the first failed event of its FLID only; the ones after
// it stay PENDING, held. A head that is backing off or DEAD holds only its own FLID. A DEAD head
// holds its FLID until an operator replays it (back to PENDING) or skips it (SKIPPED, msgxctl
// dlq). Events of different FLIDs share the batch, and a FLID's backlog goes out a batch at a
// time, not one event per round trip.
//
// When every record of a batch fails for a cause that is the cluster's (kafka.Unavailable: too
// few in-sync replicas, a leader or coordinator moving or gone, a lost connection, a producer
// broken by a transaction it could not finish), or fails retryably while no broker answers a
// metadata request, the batch is an outage, not the events' fault: no attempt is counted and
// the loop backs off, so a Kafka outage never turns the backlog into dead letters. A broken
// producer also ends the loops: the term dials a new one. Readiness (Link.Ready) fails while
// the leader's term cannot produce.
//
// When the broker rejects several records of one batch as non-retryable (it may reject a whole
// partition batch for one record), each is sent again alone before any is declared DEAD; only
// the first failed record of a FLID is sent again, the FLID's later ones wait for it.
//
// KAFKA:schd → compacted topic msgx.flight.state (FlushStates, every flush period)
//
//	visit ≤ flush-limit FLIDs ──▶ one record per due FLID: its unsent state (msg_state_out's row)
//	(by msg_state_out_unsent       (UPSERT: the full state JSON; TOMBSTONE: null value)
//	 after a cursor, so the cost   ≤ the version already sent (msg_state_sent) ──▶
//	 does not grow with flights)     settled, not sent
//	   acknowledged ──▶ msg_state_sent raised; the row → SENT unless a newer state replaced it
//	   failed       ──▶ the row, if still PENDING at or below it: attempts+1 and backoff (DEAD as above)
//
// A version at or below the highest already sent is never produced, and a newer state replaces
// the older dead letter it represents: a retry, a replay or a restart can never put an
// older state after a newer one on the compacted topic.
//
// Heartbeat → topic msgx.heartbeat (Heartbeat, every MSGX_HEARTBEAT_PERIOD on the dispatcher's
// clock, the first at the term's start; none when the topic is unset)
//
//	read under the lease: watermark, oldest unsent event per target ──▶ one record (key: the
//	transactional id prefix) with them and the highest event ids this term had acknowledged,
//	in a transaction of the heartbeat topic's producer
//
// A beat that fails is logged and the next comes at its time; fencing or a broken producer ends
// the loop like the others. Consumers watch for its absence (docs/events.md, "Heartbeat").
//
// Every batch (and every flush) is one Kafka transaction of the topic's transactional producer
// (pkg/kafka: transactional.id <prefix>.<topic>), committed before the events are recorded as delivered.
// Each term's Link initialises the producers, which fences every older producer of the same ids,
// and then checks the lease, so a deposed leader can neither commit in PostgreSQL nor in Kafka.
// A send is bounded (MSGX_KAFKA_SEND_TIMEOUT); a send that waits longer than
// MSGX_DISPATCH_SEND_WARN is logged, and msgx_dispatch_oldest_unacked_send_age_seconds shows
// the oldest wait. A send abandoned at its timeout breaks the producer: the term dials a new one
// (whose initialisation aborts the abandoned transaction) after checking the lease again.
//
// Send report → table dispatch_send (Reporter, beside the whole term, also while it dials
// again; every second it looks, and writes on a change or every 5 s)
//
//	per target: Link.Blocked (the judgement behind readiness: the term cannot produce, or a
//	send waited longer than StallAfter), else the tail not read yet (TailBlocked)
//	──▶ since when, why, the bootstrap brokers that do not
//	answer a metadata request, the last acknowledged send; written under the lease
//
// The operators' status (pkg/status) reads it to name a frozen or unreachable broker while
// events wait, and says the send state is unknown when the report stops coming.
//
// Every SENT/DEAD transition runs in a transaction that checks the leader lease first
// (leader.Lease.Check), so a deposed dispatcher cannot commit; the lease's epoch travels in
// every record's headers. Delivery is at least once: a crash between the broker's
// acknowledgement and the SENT commit sends the event again, with the same headers
// (schema_version, event_time, event_id, flid, state_version, msg_id, epoch, event_type), and
// consumers, reading read_committed, drop a (flid, state_version) they have already seen
// (docs/events.md).
package dispatch
