// Package outbound is the AODB's outbound mailbox (coutmsgs) as values: a row to write, a row
// found, a row with its text. The MySQL adapter (pkg/mailbox) reads and writes them; the request
// sender (pkg/request) decides what to write through an interface of its own. Kept apart from the
// adapter so that a binary that only registers requests (the console) links neither the adapter
// nor its MySQL driver.
package outbound

import "time"

// Message is one request to write to coutmsgs.
type Message struct {
	Text      string
	RoutingID string
	// Inserted is written to COUTMSGS_DATE_INSERTED as its own wall clock (pass airport time).
	Inserted time.Time
}

// Row is a coutmsgs row found.
type Row struct {
	ID int64
	// Inserted is COUTMSGS_DATE_INSERTED, the wall clock the row was written with, read as UTC
	// fields.
	Inserted time.Time
}

// Listed is a coutmsgs row with its message.
type Listed struct {
	Row
	Text string
}
