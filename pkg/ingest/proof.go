package ingest

import (
	"strings"
	"time"

	"github.com/msgx/msgx/pkg/mailbox"
)

// The gap proof (docs/ingest.md, "Proving a gap permanent"): a missing id m below a committed id
// can still commit only through the transaction that allocated it, and that transaction started
// before m was allocated. A read of InnoDB's transaction list k gives a horizon H_k (every id
// below it was allocated before k's snapshot began, at S_k) and the list. When a later read j,
// at least Config.ProofSettle after k on the database's clock, lists no transaction that could have started
// by S_k plus one second, then every id below H_k that is still missing at a mailbox read after j
// will never commit: it is passed at once instead of after MSGX_MAX_COMMIT_DELAY.

// proofOutcome names what one read of the transaction list concluded (metric label).
type proofOutcome string

const (
	proofProved      proofOutcome = "proved"      // a horizon was proved
	proofBlocked     proofOutcome = "blocked"     // a transaction that could hold a missing id is open
	proofSettling    proofOutcome = "settling"    // no earlier read is old enough to be proved yet
	proofStale       proofOutcome = "stale"       // InnoDB answered from its copy of an earlier read
	proofClock       proofOutcome = "clock"       // the clocks or time zones do not agree: no comparison
	proofXA          proofOutcome = "xa"          // a prepared or detached XA transaction exists
	proofServer      proofOutcome = "server"      // a read-only server, one of several writers, or cminmsgs not in InnoDB
	proofError       proofOutcome = "error"       // the read failed
	proofUnavailable proofOutcome = "unavailable" // the account may not read the list
)

var proofOutcomes = []proofOutcome{proofProved, proofBlocked, proofSettling, proofStale, proofClock, proofXA, proofServer, proofError, proofUnavailable}

// proofSlack is how much later than S_k a transaction may show as started and still count as
// one that could hold an id below H_k: trx_started has whole seconds (so the same second counts),
// and the allocating transaction may register its start just after allocating the id (auto-inc
// lock modes 1 and 2 allocate before the transaction starts).
const proofSlack = time.Second

// maxClockSkew bounds how far the reader's own start may lie from NOW(6): further means the
// session's time zone is not the server's system zone that trx_started is shown in, or a clock
// stepped; the lists are then not compared.
const maxClockSkew = 2 * time.Second

// trxRead is what the proof keeps of one read of the transaction list.
type trxRead struct {
	horizon int64     // ids below it were allocated before started
	started time.Time // the reader's own trx_started (S_k)
	now     time.Time // NOW(6) at the read
}

// prover keeps the recent reads of the transaction list; it is pure (no I/O) like plan.
type prover struct {
	reads []trxRead // in increasing now order
}

// maxProofReads bounds the reads kept, the oldest dropped first: at one read every
// mailbox.TrxListIdle or more the kept ones still reach back several seconds, further than
// proofSlack needs.
const maxProofReads = 64

// judge adds list l and returns the proved horizon (ids below it still missing at a later mailbox
// read never commit; 0: none) and the outcome. settle is the least time between the read that
// gives the horizon and the read that proves it.
func (p *prover) judge(l mailbox.TrxList, settle time.Duration) (int64, proofOutcome) {
	if l.ReadOnly || l.AutoIncStep != 1 || !strings.EqualFold(l.Engine, "InnoDB") {
		// The inserts may happen on another server, or in an engine whose transactions the list
		// does not show.
		return 0, proofServer
	}
	if l.OwnStarted.IsZero() {
		return 0, proofStale
	}
	if d := l.Now.Sub(l.OwnStarted); d < 0 || d > maxClockSkew ||
		(len(p.reads) > 0 && l.Now.Before(p.reads[len(p.reads)-1].now)) {
		p.reads = nil // the clock moved back or the zones differ: earlier reads compare with nothing
		return 0, proofClock
	}
	if l.PreparedXA > 0 {
		return 0, proofXA
	}
	for _, t := range l.Others {
		if t.Thread == 0 || strings.EqualFold(t.State, "PREPARED") {
			return 0, proofXA
		}
		if t.Started.After(l.Now.Add(proofSlack)) {
			return 0, proofClock // a start in the future: the clock stepped back while it was open
		}
	}
	p.reads = append(p.reads, trxRead{horizon: l.Horizon, started: l.OwnStarted, now: l.Now})
	if len(p.reads) > maxProofReads {
		p.reads = append(p.reads[:0], p.reads[len(p.reads)-maxProofReads:]...)
	}
	outcome := proofSettling
	// The latest earlier read that is old enough and that no open transaction could precede.
	for k := len(p.reads) - 2; k >= 0; k-- {
		r := p.reads[k]
		if l.Now.Sub(r.now) < settle || r.horizon == 0 {
			continue
		}
		if couldHold(l.Others, r.started) {
			outcome = proofBlocked
			continue
		}
		return r.horizon, proofProved
	}
	return 0, outcome
}

// couldHold reports whether a transaction of others could have allocated an id before a
// snapshot that began at started (its trx_started): one that shows a start no later than
// started+proofSlack and may insert.
func couldHold(others []mailbox.Trx, started time.Time) bool {
	for _, t := range others {
		if t.ReadOnly || t.NonLocking {
			continue
		}
		if !t.Started.After(started.Add(proofSlack)) {
			return true
		}
	}
	return false
}

// prune drops the reads whose horizon can no longer prove a missing id above w.
func (p *prover) prune(w int64) {
	i := 0
	for i < len(p.reads) && p.reads[i].horizon <= w+1 {
		i++
	}
	p.reads = append(p.reads[:0], p.reads[i:]...)
}
