package ingest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/mailbox"
)

func TestProofJudge(t *testing.T) {
	t.Parallel()
	const settle = 100 * time.Millisecond
	sec := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	// list is a read at now (own transaction started in now's whole second) with the others.
	list := func(now float64, horizon int64, others ...mailbox.Trx) mailbox.TrxList {
		n := sec(now)
		return mailbox.TrxList{Now: n, Horizon: horizon, OwnStarted: n.Truncate(time.Second), Others: others, AutoIncStep: 1, Engine: "InnoDB"}
	}
	trx := func(started float64) mailbox.Trx {
		return mailbox.Trx{Started: sec(started).Truncate(time.Second), State: "RUNNING", Thread: 7}
	}
	type read struct {
		l       mailbox.TrxList
		proved  int64
		outcome proofOutcome
	}
	for _, tc := range []struct {
		name  string
		reads []read
	}{
		{"the first read only gives a horizon", []read{{list(10.2, 5), 0, proofSettling}}},
		{"a later clean read proves the earlier horizon", []read{
			{list(10.2, 5), 0, proofSettling}, {list(10.4, 6), 5, proofProved}}},
		{"not before the settle time", []read{
			{list(10.2, 5), 0, proofSettling}, {list(10.25, 6), 0, proofSettling}, {list(10.31, 6), 5, proofProved}}},
		{"the latest old-enough read proves the most", []read{
			{list(10.2, 5), 0, proofSettling}, {list(10.4, 6), 5, proofProved}, {list(10.6, 8), 6, proofProved}}},
		{"a transaction started before the horizon's read blocks it", []read{
			{list(10.2, 5, trx(3)), 0, proofSettling}, {list(10.4, 6, trx(3)), 0, proofBlocked}}},
		{"the same second and the next count as could-be", []read{
			{list(10.2, 5), 0, proofSettling}, {list(11.3, 6, trx(11.1)), 0, proofBlocked},
			{list(12.1, 7, trx(11.1)), 0, proofBlocked}}},
		{"a transaction started two seconds later cannot hold the id", []read{
			{list(10.2, 5), 0, proofSettling}, {list(12.3, 6, trx(12.1)), 5, proofProved}}},
		{"read-only and non-locking transactions cannot insert", []read{
			{list(10.2, 5), 0, proofSettling},
			{list(10.4, 6, mailbox.Trx{Started: sec(3), State: "RUNNING", Thread: 8, ReadOnly: true},
				mailbox.Trx{Started: sec(3), State: "RUNNING", Thread: 9, NonLocking: true}), 5, proofProved}}},
		{"a stale list (own transaction absent) proves nothing", []read{
			{list(10.2, 5), 0, proofSettling}, {mailbox.TrxList{Now: sec(10.4), Horizon: 6, AutoIncStep: 1, Engine: "InnoDB"}, 0, proofStale}}},
		{"a prepared XA transaction stops the proof", []read{
			{list(10.2, 5), 0, proofSettling}, {func() mailbox.TrxList { l := list(10.4, 6); l.PreparedXA = 1; return l }(), 0, proofXA}}},
		{"a transaction no session holds stops the proof", []read{
			{list(10.2, 5), 0, proofSettling}, {list(10.4, 6, mailbox.Trx{Started: sec(10.3), State: "RUNNING"}), 0, proofXA}}},
		{"a session time zone unlike the server's stops the proof", []read{
			{list(10.2, 5), 0, proofSettling},
			{mailbox.TrxList{Now: sec(10.4), Horizon: 6, OwnStarted: sec(10.4 - 8*3600).Truncate(time.Second), AutoIncStep: 1, Engine: "InnoDB"}, 0, proofClock},
			{list(10.6, 6), 0, proofSettling}}},
		{"a clock moved back forgets the earlier reads", []read{
			{list(10.2, 5), 0, proofSettling}, {list(9.5, 6), 0, proofClock}, {list(9.7, 6), 0, proofSettling}}},
		{"a read-only server (a replica) proves nothing", []read{
			{list(10.2, 5), 0, proofSettling}, {func() mailbox.TrxList { l := list(10.4, 6); l.ReadOnly = true; return l }(), 0, proofServer}}},
		{"one of several writers proves nothing", []read{
			{list(10.2, 5), 0, proofSettling}, {func() mailbox.TrxList { l := list(10.4, 6); l.AutoIncStep = 3; return l }(), 0, proofServer}}},
		{"a mailbox table in another engine proves nothing", []read{
			{list(10.2, 5), 0, proofSettling}, {func() mailbox.TrxList { l := list(10.4, 6); l.Engine = "Aria"; return l }(), 0, proofServer}}},
		{"a transaction started in the future stops the proof", []read{
			{list(10.2, 5), 0, proofSettling}, {list(10.4, 6, trx(15)), 0, proofClock}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var p prover
			for i, r := range tc.reads {
				proved, outcome := p.judge(r.l, settle)
				require.Equal(t, r.outcome, outcome, "read %d", i)
				require.Equal(t, r.proved, proved, "read %d", i)
			}
		})
	}
}

func TestProverPrune(t *testing.T) {
	t.Parallel()
	p := prover{reads: []trxRead{{horizon: 5}, {horizon: 8}, {horizon: 9}}}
	p.prune(7)
	require.Equal(t, []trxRead{{horizon: 9}}, p.reads)
}
