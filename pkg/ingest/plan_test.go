package ingest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/mailbox"
)

func msgs(ids ...int64) []mailbox.Message {
	out := make([]mailbox.Message, len(ids))
	for i, id := range ids {
		out[i] = mailbox.Message{ID: id}
	}
	return out
}

func enqueued(d decision) []int64 {
	var ids []int64
	for _, m := range d.enqueue {
		ids = append(ids, m.ID)
	}
	return ids
}

func TestPlan(t *testing.T) {
	t.Parallel()
	const delay = 30 * time.Second
	now := t0.Add(time.Hour)
	type want struct {
		enqueue []int64
		skips   [][2]int64
		next    cursor
		blocked int64
	}
	aged := now.Add(-delay)
	type obs = observations
	for _, tc := range []struct {
		name string
		cur  cursor
		obs  obs
		rows []int64
		want want
	}{
		{"nothing visible", cursor{W: 7}, nil, nil, want{next: cursor{W: 7}}},
		{"nothing visible clears a stale gap", cursor{W: 7, GapStart: 8, FirstSeen: now}, nil, nil, want{next: cursor{W: 7}}},
		{"contiguous run", cursor{W: 7}, obs{{10, now}}, []int64{8, 9, 10}, want{enqueue: []int64{8, 9, 10}, next: cursor{W: 10}}},
		{"gap after the run is new", cursor{W: 7}, obs{{12, now}}, []int64{8, 9, 12},
			want{enqueue: []int64{8, 9}, next: cursor{W: 9, GapStart: 10, FirstSeen: now, Horizon: 12}, blocked: 2}},
		{"gap first seen now", cursor{W: 7}, obs{{10, now}}, []int64{10}, want{next: cursor{W: 7, GapStart: 8, FirstSeen: now, Horizon: 10}, blocked: 2}},
		{"gap keeps its first-seen time", cursor{W: 7, GapStart: 8}, obs{{10, now.Add(-delay + time.Millisecond)}}, []int64{10},
			want{next: cursor{W: 7, GapStart: 8, FirstSeen: now.Add(-delay + time.Millisecond), Horizon: 10}, blocked: 2}},
		{"aged gap skips exactly the missing ids; a gap seen later keeps its own window",
			cursor{W: 7, GapStart: 8}, obs{{10, aged}, {13, now}}, []int64{10, 11, 13},
			want{enqueue: []int64{10, 11}, skips: [][2]int64{{8, 9}}, next: cursor{W: 11, GapStart: 12, FirstSeen: now, Horizon: 13}, blocked: 1}},
		{"every gap seen in the aged window is skipped together",
			cursor{W: 7, GapStart: 8}, obs{{13, aged}, {14, now}}, []int64{10, 11, 13, 14},
			want{enqueue: []int64{10, 11, 13, 14}, skips: [][2]int64{{8, 9}, {12, 12}}, next: cursor{W: 14}}},
		{"aged gap partly filled skips only what is still missing", cursor{W: 7, GapStart: 8}, obs{{10, now.Add(-time.Hour)}}, []int64{9, 10},
			want{enqueue: []int64{9, 10}, skips: [][2]int64{{8, 8}}, next: cursor{W: 10}}},
		{"filled gap: run, no skip", cursor{W: 7, GapStart: 8}, obs{{9, now.Add(-time.Hour)}}, []int64{8, 9},
			want{enqueue: []int64{8, 9}, next: cursor{W: 9}}},
		{"huge aged gap skipped in chunks inside the same window", cursor{W: 0, GapStart: 1}, obs{{25, aged}}, []int64{25},
			want{skips: [][2]int64{{1, 10}}, next: cursor{W: 10, GapStart: 11, FirstSeen: aged, Horizon: 25}, blocked: 14}},
		{"a gap that appears after an older one filled gets a full window", cursor{W: 7, GapStart: 8}, obs{{9, aged}, {12, now}}, []int64{8, 9, 10, 12},
			want{enqueue: []int64{8, 9, 10}, next: cursor{W: 10, GapStart: 11, FirstSeen: now, Horizon: 12}, blocked: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := plan(tc.cur, msgs(tc.rows...), tc.obs, now, delay, 10, 0)
			require.NoError(t, err)
			require.Equal(t, tc.want.enqueue, enqueued(d))
			var skips [][2]int64
			for _, s := range d.skips {
				skips = append(skips, [2]int64{s.from, s.to})
			}
			require.Equal(t, tc.want.skips, skips)
			require.True(t, tc.want.next.equal(d.next), "next cursor %+v, want %+v", d.next, tc.want.next)
			require.Equal(t, tc.want.blocked, d.blocked)
		})
	}
}

func TestPlanRejectsRowsAtOrBelowW(t *testing.T) {
	t.Parallel()
	_, err := plan(cursor{W: 7}, msgs(7), nil, t0, time.Second, 10, 0)
	require.Error(t, err)
	_, err = plan(cursor{W: 7}, msgs(9, 8), nil, t0, time.Second, 10, 0)
	require.Error(t, err)
}

// Missing ids below a proved horizon are skipped at once, recorded as proved; those above it
// keep their window, and an aged range is recorded as aged.
func TestPlanProved(t *testing.T) {
	t.Parallel()
	const delay = 30 * time.Second
	now := t0.Add(time.Hour)
	aged := now.Add(-delay)
	type skipped struct {
		from, to int64
		by       passedBy
	}
	for _, tc := range []struct {
		name    string
		obs     observations
		rows    []int64
		proved  int64
		enqueue []int64
		skips   []skipped
		next    cursor
	}{
		{"proved gap passes at once", observations{{10, now}}, []int64{10, 11}, 10,
			[]int64{10, 11}, []skipped{{8, 9, passedProved}}, cursor{W: 11}},
		{"only ids below the proved horizon", observations{{13, now}}, []int64{10, 13}, 10,
			[]int64{10}, []skipped{{8, 9, passedProved}}, cursor{W: 10, GapStart: 11, FirstSeen: now, Horizon: 13}},
		{"aged first, then proved", observations{{10, aged}, {13, now}}, []int64{10, 13}, 13,
			[]int64{10, 13}, []skipped{{8, 9, passedAged}, {11, 12, passedProved}}, cursor{W: 13}},
		{"a horizon at or below W proves nothing", observations{{10, now}}, []int64{10}, 7,
			nil, nil, cursor{W: 7, GapStart: 8, FirstSeen: now, Horizon: 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, err := plan(cursor{W: 7, GapStart: 8, FirstSeen: now}, msgs(tc.rows...), tc.obs, now, delay, 10, tc.proved)
			require.NoError(t, err)
			require.Equal(t, tc.enqueue, enqueued(d))
			var skips []skipped
			for _, s := range d.skips {
				skips = append(skips, skipped{s.from, s.to, s.by})
			}
			require.Equal(t, tc.skips, skips)
			require.True(t, tc.next.equal(d.next), "next cursor %+v, want %+v", d.next, tc.next)
		})
	}
}
