package request_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/request"
)

// An answer changes state only under an open request within its timeout: the answer of a
// superseded request (made before the request that replaced it was sent) and the answer to a
// request past its timeout, swept or not, are SKIPPED and change neither the data nor the
// request; reference lists alike.
func TestAnswerToAnExpiredRequestChangesNothing(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, nil)

	// A schedule request superseded by a newer one of its day: its answer, made before the newer
	// request was sent, is refused; the newer request's own answer applies.
	first := p.send(t, days(2, 2))
	p.clock.Advance(2 * time.Second)
	second := p.send(t, days(2, 2))
	require.Equal(t, request.ReasonSuperseded, p.get(t, first.ID).CloseReason)
	got := p.run(t, p.schdOn("RESP", first.SentAt.Add(time.Second), map[int64]int{1: 2}))
	require.Equal(t, outcome{ID: got[0].ID, Status: "SKIPPED", Reason: "no-open-request:before-sent"}, got[0])
	require.Empty(t, p.flights(t), "the superseded request's answer creates no flight")
	old := p.get(t, first.ID)
	require.Equal(t, request.Expired, old.Status)
	require.Zero(t, old.ResponseID, "the superseded request records no answer")
	got = p.run(t, p.schdOn("RESP", p.clock.Now(), map[int64]int{2: 2}))
	require.Equal(t, "SUCCEEDED", got[0].Status, got[0].Reason)
	require.Contains(t, got[0].Reason, fmt.Sprintf("answers request %d (", second.ID))
	require.Equal(t, []int64{2}, p.flights(t))

	// Lists: the superseded RQRD's answer deletes nothing and adds nothing.
	got = p.run(t, p.abdg("DNLD", p.clock.Now(), "A1", "A2"))
	require.Equal(t, "SUCCEEDED", got[0].Status, got[0].Reason)
	rqrd := p.send(t, request.Spec{Kind: request.List, ListCode: "ABDG", Origin: request.Operator, Actor: "test"})
	p.clock.Advance(2 * time.Second)
	newer := p.send(t, request.Spec{Kind: request.List, ListCode: "ABDG", Origin: request.Operator, Actor: "test"})
	got = p.run(t, p.abdg("RESP", rqrd.SentAt.Add(time.Second), "A9"))
	require.Equal(t, outcome{ID: got[0].ID, Status: "SKIPPED", Reason: "no-open-request:before-sent"}, got[0])
	require.Equal(t, []string{"A1", "A2"}, p.refKeys(t))
	require.Zero(t, p.get(t, rqrd.ID).ResponseID)

	// Past its timeout a request takes no answer, although the sweep has not expired it yet; the
	// sweep then expires it.
	p.clock.Advance(30 * time.Minute)
	require.Equal(t, request.Sent, p.get(t, newer.ID).Status, "not swept yet")
	got = p.run(t, p.abdg("RESP", p.clock.Now(), "A9"))
	require.Equal(t, outcome{ID: got[0].ID, Status: "SKIPPED", Reason: "no-open-request"}, got[0])
	require.Equal(t, []string{"A1", "A2"}, p.refKeys(t))
	res, err := p.sweeper.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, res.Expired)
	late := p.get(t, newer.ID)
	require.Equal(t, request.ReasonTimeout, late.CloseReason)
	require.Zero(t, late.ResponseID)
}

// An answer whose DTTM lies before its request's sent time, by one second, was made before the
// request was sent and is refused: the request stays open and nothing changes. One in the
// second of the send applies.
func TestAnswerMadeBeforeItsRequestWasSentIsRefused(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, nil)
	p.clock.Advance(time.Minute + 300*time.Millisecond)
	r := p.send(t, days(3, 3))
	got := p.run(t, p.schdOn("RESP", r.SentAt.Add(-time.Second), map[int64]int{2: 3}))
	require.Equal(t, outcome{ID: got[0].ID, Status: "SKIPPED", Reason: "no-open-request:before-sent"}, got[0])
	require.Empty(t, p.flights(t))
	require.Equal(t, request.Sent, p.get(t, r.ID).Status, "the request still awaits its answer")

	got = p.run(t, p.schdOn("RESP", r.SentAt.Truncate(time.Second), map[int64]int{2: 3}))
	require.Equal(t, "SUCCEEDED", got[0].Status, got[0].Reason)
	require.Equal(t, []int64{2}, p.flights(t))
	require.Equal(t, request.Done, p.get(t, r.ID).Status)
}

// A send interrupted after its coutmsgs insert is recovered with the row's insert time as its
// sent time; an answer that arrives before the recovery waits (FAILED, retried) and applies once
// the request is SENT.
func TestRecoveredSendTakesItsAnswer(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, nil)
	reg, err := p.store.Register(ctx, days(2, 2), p.clock.Now()) // 08:00
	require.NoError(t, err)
	crashing, err := request.NewSender(p.store, p.box, p.clock, false)
	require.NoError(t, err)
	crashing.SetStep(func(name string) error {
		if name == request.StepInserted {
			return errKilled
		}
		return nil
	})
	_, err = crashing.Send(ctx, reg.Request.ID) // coutmsgs row inserted at 08:00, no local commit
	require.ErrorIs(t, err, errKilled)

	p.clock.Advance(time.Minute)
	ids := p.enqueue(t, p.schdOn("RESP", p.clock.Now(), map[int64]int{1: 2})) // the AODB answers at 08:01
	p.drain(t)
	o := p.outcome(t, ids[0])
	require.Equal(t, "FAILED", o.Status, "the answer waits while its request is REGISTERED")
	require.Contains(t, o.Reason, "send to be confirmed")
	require.Empty(t, p.flights(t))

	p.clock.Advance(4 * time.Minute) // 08:05: the jobs sweep recovers the send
	res, err := p.sweeper.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, res.Sent)
	r := p.get(t, reg.Request.ID)
	require.Equal(t, request.Sent, r.Status)
	require.True(t, r.SentAt.Equal(t0), "sent_at is the outbound row's insert time, not the recovery's: %s", r.SentAt)

	p.drain(t)
	o = p.outcome(t, ids[0])
	require.Equal(t, "SUCCEEDED", o.Status, o.Reason)
	require.Contains(t, o.Reason, fmt.Sprintf("answers request %d (2026-12-02..2026-12-02, fallback match)", r.ID))
	require.Equal(t, []int64{1}, p.flights(t))
	require.Equal(t, request.Done, p.get(t, r.ID).Status)

}
