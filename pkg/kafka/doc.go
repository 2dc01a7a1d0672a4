// Package kafka is msgx's one adapter to Kafka: every sarama type stays inside it. It builds the
// producer configuration under rule D3b and refuses to start when any part of D3b is missing
// (d3.go), sends batches of records in transactions with one answer per record (producer.go),
// probes the brokers for readiness (probe.go), cuts a producer's connections to a broker the
// cluster has fenced while a send waits on it (watch.go), checks (and, in tests, creates) the
// topics (admin.go), and classifies broker rejections (errors.go). The development broker is
// pkg/dev/broker.
//
// Producer rule D3b (docs/spec.md §9), not overridable by any setting:
//
//	Producer.Idempotent     = true
//	Producer.Transaction.ID = <MSGX_KAFKA_TRANSACTIONAL_ID_PREFIX>.<topic>: one stable
//	                          transactional producer per dispatcher role and topic, so the
//	                          producer a new leader initialises fences every older one
//	Producer.RequiredAcks   = WaitForAll (acks=all)
//	Net.MaxOpenRequests     = 1 (one request in flight per broker: no reordering on retry)
//	Net.Dial/Read/WriteTimeout, Producer.Timeout, Producer.Transaction.Timeout bounded
//	                          (> 0, ≤ MaxTimeout); every Send is bounded by the send timeout
//	Version                 = the configured version, at least 2.1.0 (transactions; Kafka 4
//	                          answers no older request version)
//	Producer.Retry.Max, Producer.Transaction.Retry.Max between 1 and MaxProducerRetries
//	                          (sarama's own retries stay short; the dispatcher's backoff does
//	                          the long retrying)
//
// Each Send is one Kafka transaction per topic: begin, produce, commit. Records of an aborted
// or fenced transaction are never seen by consumers reading with isolation.level=read_committed
// (docs/events.md). A producer whose transaction could not be finished in time (a hung broker),
// that was fenced (PRODUCER_FENCED, or INVALID_PRODUCER_EPOCH on a real broker's produce path),
// or that a transaction left not ready for the next one (an abort that could not reach its
// coordinator, an epoch bump that did not finish) is broken: the failed records of that
// transaction and every later Send answer ErrBroken, and its owner dials a new one
// (initialising it with the same transactional id aborts the abandoned transaction) after
// checking that it still leads. Unavailable tells a failure that is the cluster's (an outage)
// from one that is the record's. What each broker error does, and the retry budgets chosen
// against a real broker: docs/kafka.md.
package kafka
