// Package sendclass names why the dispatcher's sends to Kafka are blocked or failing: the class
// the dispatcher writes to dispatch_send (pkg/dispatch) and the verdict reads (pkg/status), owned
// here so that the reader links none of the dispatcher.
package sendclass

// Classes of a blocked send.
const (
	Stalled     = "stalled"     // a send has waited longer than the dispatcher's stall bound for the brokers
	Unreachable = "unreachable" // no producer could be dialled (no broker answers)
	Broken      = "broken"      // the producer broke (a send abandoned at its timeout); a new one is dialled
	Refused     = "refused"     // the cluster refused the last send (no leader, too few in-sync replicas)
	Topic       = "topic"       // the topic check refused a topic (missing, not compacted)
	Starting    = "starting"    // the term is dialling and checking the lease and the topics
	Tail        = "tail"        // the term has not read the topics' tail yet: nothing is sent until it has
)
