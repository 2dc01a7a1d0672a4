package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/msgx/msgx/pkg/dev/chaos"
	"github.com/msgx/msgx/pkg/dev/kafkatest"
	"github.com/msgx/msgx/pkg/dev/stack"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/dev/tlsenv"
	"github.com/msgx/msgx/pkg/dev/verify"
	"github.com/msgx/msgx/pkg/dispatch"
	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/event/change"
	"github.com/msgx/msgx/pkg/flight"
	"github.com/msgx/msgx/pkg/flightstore"
	"github.com/msgx/msgx/pkg/kafka"
	"github.com/msgx/msgx/pkg/outbox"
)

// The dispatcher runs both loops while the processor commits version after version of many
// flights: a read_committed consumer of the changes topic sees every flight's versions once
// each, in order, and the state topic never goes back.
func confOrderPerFLID(t *testing.T, b *confBroker) {
	cfg := b.topics(t, "order", nil, nil)
	st := newConfStage(t, cfg, dispatch.Config{Batch: 100, FlushPeriod: 50 * time.Millisecond, FlushLimit: 500})
	const flids, versions = 150, 20
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- st.disp.Run(ctx, st.lease) }()
	for v := int64(1); v <= versions; v++ {
		var evs []event.Event
		for f := int64(1); f <= flids; f++ {
			evs = append(evs, msgEvent(f, v), stateEvent(f, v, event.Upsert))
		}
		require.NoError(t, outbox.Enqueue(ctx, st.db.Pool, time.Now(), evs...))
	}
	waitUntil(t, 2*time.Minute, 100*time.Millisecond, "every event sent", func() bool {
		select {
		case err := <-done:
			require.FailNow(t, "the dispatcher stopped", "%v", err)
		default:
		}
		return st.unsent(t) == 0
	})
	cancel()
	require.NoError(t, <-done)

	want := map[string]int64{}
	for f := 1; f <= flids; f++ {
		want[strconv.Itoa(f)] = versions
	}
	require.Empty(t, checkStream(t, b.read(t, cfg.TopicChanges), want), "each (flid, state_version) once")
	states := asStack(t, verify.TopicState, b.read(t, cfg.TopicState))
	require.Empty(t, verify.VersionsNeverDecrease(states))
	for flid, r := range verify.LastPerFLID(states, verify.TopicState) {
		require.Equal(t, int64(versions), r.StateVersion, "FLID %d: last state", flid)
	}
}

// A few hundred transactions back to back, the two topics' side by side on one producer: none
// fails, and each record is read once, in order. Its state topic is not compacted: the case
// reads every record, and a compaction pass another case asks of the shared broker would drop
// all but the newest of each key.
func confTransactionsBackToBack(t *testing.T, b *confBroker) {
	cfg := b.topics(t, "txns", nil, map[string]string{"cleanup.policy": "delete"})
	p := dialConf(t, cfg)
	const batches, per = 150, 20 // per topic
	failed := make(chan error, 2)
	for _, topic := range cfg.Topics() {
		go func() { failed <- sendBatches(p, topic, batches, per) }()
	}
	for range cfg.Topics() {
		require.NoError(t, <-failed)
	}
	for _, topic := range cfg.Topics() {
		recs := b.read(t, topic)
		require.Len(t, recs, batches*per, topic)
		next := map[string]int64{} // per key, the batch its next record must come from
		for _, r := range recs {
			require.Equal(t, next[r.Key], r.Int("batch"), "%s key %s", topic, r.Key)
			next[r.Key]++
		}
	}
}

// sendBatches sends batches transactions of per records to topic, one after the other, and
// returns the first failure.
func sendBatches(p *kafka.Producer, topic string, batches, per int) error {
	for i := range batches {
		recs := make([]kafka.Record, per)
		for j := range recs {
			recs[j] = kafka.Record{Topic: topic, Key: strconv.Itoa(j), Value: fmt.Appendf(nil, `{"batch":%d,"key":%d}`, i, j),
				Headers: []kafka.Header{{Key: "batch", Value: strconv.Itoa(i)}}}
		}
		for j, err := range p.Send(context.Background(), recs) {
			if err != nil {
				return fmt.Errorf("%s batch %d record %d: %w", topic, i, j, err)
			}
		}
	}
	return nil
}

// Two dispatcher processes; each round the leader reads a batch of both targets, is held before
// sending and SIGSTOPped past its lease, the other takes over, and the deposed one resumes and
// sends its stale batch (chaos.Zombie): the broker fences it every round, and a read_committed
// consumer never sees a record of the deposed epoch.
func confDeposedDispatcherFenced(t *testing.T, b *confBroker) {
	cfg := b.cfg
	cfg.TopicChanges, cfg.TopicState = verify.TopicChanges, verify.TopicState
	b.createTopics(t, cfg, nil, nil)
	rounds := zombieRounds(t, b)
	binDir := b.bins.get(t)
	db := testdb.New(t)
	logDir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rounds+2)*time.Minute)
	defer cancel()
	began := time.Now()
	res, err := chaos.Zombie(ctx, chaos.ZombieConfig{BinDir: binDir, LogDir: logDir, PGURL: db.URL, Rounds: rounds, Kafka: &cfg})
	if err != nil || len(res.Problems) > 0 {
		keep, _ := os.MkdirTemp("", "msgx-conformance-zombie-")
		_ = os.CopyFS(keep, os.DirFS(logDir))
		t.Logf("dispatchers' logs kept in %s", keep)
	}
	require.NoError(t, err)
	require.Equal(t, rounds, res.Rounds)
	require.Empty(t, res.Problems, "records of a deposed leader or out of order")
	require.Equal(t, rounds, res.Fenced, "the broker fenced the deposed leader's sends in every round")
	require.Positive(t, res.Records)
	t.Logf("%d rounds in %s; slowest takeover %s; %d records read", res.Rounds,
		time.Since(began).Round(100*time.Millisecond), res.Takeover.Round(100*time.Millisecond), res.Records)
}

// A transaction whose batch holds a record the broker rejects is aborted after the broker
// appended the others: a read_uncommitted consumer sees them, a read_committed one never does.
func confAbortedRecordsInvisible(t *testing.T, b *confBroker) {
	cfg := b.topics(t, "abort", map[string]string{"max.message.bytes": "20000"}, nil)
	p := dialConf(t, cfg)
	ctx := context.Background()
	const keys = 40
	batch := func(prefix string) []kafka.Record {
		recs := make([]kafka.Record, keys)
		for k := range recs {
			recs[k] = kafka.Record{Topic: cfg.TopicChanges, Key: strconv.Itoa(k), Value: []byte(prefix + strconv.Itoa(k))}
		}
		return recs
	}
	// Incompressible padding: the limit applies after the producer's compression.
	rnd := rand.New(rand.NewPCG(5, 5))
	pad := make([]byte, 100000)
	for i := range pad {
		pad[i] = "0123456789abcdef"[rnd.IntN(16)]
	}
	errs := p.Send(ctx, append(batch("aborted-"), kafka.Record{Topic: cfg.TopicChanges, Key: "big", Value: pad}))
	require.ErrorContains(t, errs[keys], "too large")
	aborted := 0
	for _, err := range errs[:keys] {
		if errors.Is(err, kafka.ErrAborted) {
			aborted++
			continue
		}
		require.ErrorContains(t, err, "too large", "rejected with the big record's partition batch")
	}
	require.Positive(t, aborted, "records of other partitions were appended, then aborted")
	t.Logf("%d of %d records appended, then aborted", aborted, keys)
	for _, err := range p.Send(ctx, batch("committed-")) {
		require.NoError(t, err)
	}

	values := func(recs []kafkatest.Record, prefix string) []string {
		var out []string
		for _, r := range recs {
			if strings.HasPrefix(string(r.Value), prefix) {
				out = append(out, string(r.Value))
			}
		}
		return out
	}
	committed := b.read(t, cfg.TopicChanges)
	require.Len(t, committed, keys)
	require.Len(t, values(committed, "committed-"), keys)
	all := b.read(t, cfg.TopicChanges, kgo.FetchIsolationLevel(kgo.ReadUncommitted()))
	require.Len(t, values(all, "aborted-"), aborted, "the aborted records are in the log")
}

// The processor stores versions of flights and the dispatcher flushes each to the compacted
// state topic; some flights are purged (tombstones). Once the broker has compacted the topic
// (every stored flight down to one record), a consumer rebuilding the state from it (a
// tombstone removes its key) holds exactly the flights stored in PostgreSQL, as stored.
func confCompactedStateEqualsPostgreSQL(t *testing.T, b *confBroker) {
	cfg := b.topics(t, "compaction", nil, b.fastCompaction)
	st := newConfStage(t, cfg, dispatch.Config{Batch: 500, FlushPeriod: time.Second, FlushLimit: 500})
	ctx := context.Background()
	const flights, versions, purge = 40, 6, 10
	flids := make([]int64, flights)
	for i := range flids {
		flids[i] = int64(i + 1)
	}
	states := map[int64]*flight.State{}
	flush := func() {
		for {
			res, err := st.disp.FlushStates(ctx, st.lease)
			require.NoError(t, err)
			require.Zero(t, res.Retried+res.Dead)
			if res.Claimed == 0 {
				return
			}
		}
	}
	for v := int64(1); v <= versions; v++ {
		writeFlights(t, st.db, states, flids, v)
		flush()
	}
	purged := purgeFlights(t, st.db, states, flids[:purge])
	flush()

	recs, fillers := waitCompacted(t, b, st, cfg.TopicState, states, purged, flush)
	t.Logf("%d flights × %d versions and %d purges flushed; after %d filler tombstones, %d records remain", flights, versions, purge, fillers, len(recs))
	rebuilt := map[string]kafkatest.Record{}
	for _, r := range recs {
		if r.Value == nil {
			delete(rebuilt, r.Key)
			continue
		}
		rebuilt[r.Key] = r
	}
	for _, flid := range purged {
		require.NotContains(t, rebuilt, flid, "purged: its tombstone removed it")
	}
	stored, err := verify.LoadStates(ctx, st.db.Pool)
	require.NoError(t, err)
	require.Len(t, stored, flights-purge)
	var last []kafkatest.Record
	for _, r := range rebuilt {
		last = append(last, r)
	}
	require.Empty(t, verify.StateTopic(asStack(t, verify.TopicState, last), stored, time.UTC))
}

// waitCompacted waits until the state topic holds one record of each flight of states and at
// most one of each purged one, and returns its records and how many filler tombstones it took:
// tombstones of flights never stored keep appending (flush sends them, unless a running
// dispatcher does), so the segments holding the flights' records roll and are cleaned; they
// remove nothing from a rebuilt state.
func waitCompacted(t *testing.T, b *confBroker, st *confStage, topic string, states map[int64]*flight.State, purged []string, flush func()) ([]kafkatest.Record, int) {
	t.Helper()
	filler := int64(900000)
	var recs []kafkatest.Record
	waitUntil(t, time.Minute, 300*time.Millisecond, "the state topic compacted", func() bool {
		b.compact()
		var evs []event.Event
		for range 4 {
			filler++
			evs = event.Purged(evs, filler, 1)
		}
		require.NoError(t, outbox.Enqueue(context.Background(), st.db.Pool, time.Now(), evs...))
		flush()
		recs = b.read(t, topic)
		n := map[string]int{}
		for _, r := range recs {
			n[r.Key]++
		}
		for flid := range states {
			if n[strconv.FormatInt(flid, 10)] != 1 {
				return false
			}
		}
		for _, flid := range purged {
			if n[flid] > 1 {
				return false
			}
		}
		return true
	})
	return recs, int(filler - 900000)
}

// writeFlights stores version v of each flight (new at v = 1, a new stand after) with its
// change events in one transaction, as the flight processor does, and keeps the states.
func writeFlights(t *testing.T, db *testdb.DB, states map[int64]*flight.State, flids []int64, v int64) {
	t.Helper()
	ctx := context.Background()
	var changes []flight.Transition
	var evs []event.Event
	next := map[int64]*flight.State{}
	for _, flid := range flids {
		old := states[flid]
		s := &flight.State{FLID: flid, Status: flight.Active, OperationDay: "2026-12-02"}
		if old != nil {
			c := old.Clone()
			s = &c
		}
		s.Version, s.LastMsgID = v, 100*flid+v
		s.F[flight.FLNO] = flight.Text(fmt.Sprintf("CA%04d", flid))
		s.F[flight.STND] = flight.Text(fmt.Sprintf("S%d", v))
		changes = append(changes, flight.Transition{Old: old, Next: s})
		evs = change.Append(evs, time.UTC, event.Source{MsgID: s.LastMsgID, Type: "UFIS", Styp: "U"}, old, s)
		next[flid] = s
	}
	require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		if err := flightstore.Save(ctx, tx, changes, nil, time.Now()); err != nil {
			return err
		}
		return outbox.Enqueue(ctx, tx, time.Now(), evs...)
	}))
	for flid, s := range next {
		states[flid] = s
	}
}

// purgeFlights deletes the flights and enqueues their purge events in one transaction, as the
// history sweep does, and returns their keys.
func purgeFlights(t *testing.T, db *testdb.DB, states map[int64]*flight.State, flids []int64) []string {
	t.Helper()
	ctx := context.Background()
	var evs []event.Event
	var keys []string
	for _, flid := range flids {
		evs = event.Purged(evs, flid, states[flid].Version+1)
		keys = append(keys, strconv.FormatInt(flid, 10))
	}
	require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM flight WHERE flid = ANY($1)`, flids); err != nil {
			return err
		}
		return outbox.Enqueue(ctx, tx, time.Now(), evs...)
	}))
	for _, flid := range flids {
		delete(states, flid)
	}
	return keys
}

// asStack are the records as pkg/dev/verify checks them, on topic (verify's topic names).
func asStack(t *testing.T, topic string, recs []kafkatest.Record) []stack.Record {
	out := make([]stack.Record, len(recs))
	for i, r := range recs {
		e := r.Event(t)
		out[i] = stack.Record{Topic: topic, FLID: e.FLID, StateVersion: e.StateVersion, EventID: e.EventID,
			EventType: e.Type, Epoch: e.Epoch, MsgID: e.MsgID, Partition: r.Partition, Offset: r.Offset, Value: r.Value}
	}
	return out
}

// The producer compresses its batches with lz4 (the default): the broker keeps them so, and a
// consumer reads every record back byte for byte.
func confLZ4RoundTrip(t *testing.T, b *confBroker) {
	cfg := b.topics(t, "lz4", nil, nil)
	cfg.Compression = "lz4"
	p := dialConf(t, cfg)
	want := map[string]string{}
	var recs []kafka.Record
	for k := range 50 {
		key := strconv.Itoa(k)
		want[key] = fmt.Sprintf(`{"flid":%d,"rows":%q}`, k, strings.Repeat(`{"stnd":"215","gate":"B12"},`, 100))
		recs = append(recs, kafka.Record{Topic: cfg.TopicChanges, Key: key, Value: []byte(want[key]),
			Headers: []kafka.Header{{Key: "flid", Value: key}}})
	}
	for _, err := range p.Send(context.Background(), recs) {
		require.NoError(t, err)
	}
	got := kafkatest.ReadAll(t, b.opts, cfg.TopicChanges, time.Minute)
	require.Len(t, got, len(want))
	for _, r := range got {
		const lz4 = 3 // the record batch attribute's compression codec
		require.Equal(t, uint8(lz4), r.Attrs.CompressionType(), "key %s", r.Key)
		require.Equal(t, want[string(r.Key)], string(r.Value))
		require.Equal(t, string(r.Key), kafkatest.FromKgo(r).Headers["flid"])
	}
}

// With the dispatcher's own settings (MSGX_KAFKA_TLS, MSGX_KAFKA_TLS_CA_FILE,
// MSGX_KAFKA_SASL_MECHANISM=SCRAM-SHA-512, user and password) a leadership term connects,
// checks the topics and sends; a wrong password, an untrusted certificate, plaintext or no SASL
// is refused.
func confSCRAMOverTLS(t *testing.T, b *confBroker) {
	cfg := b.topics(t, "auth", nil, nil)
	require.NoError(t, cfg.ProductionRefusals(), "settings production accepts")
	link, err := dispatch.NewLink(cfg, 10*time.Millisecond, zerolog.Nop())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var errs []error
	require.NoError(t, link.Term(ctx, func(context.Context) error { return nil }, func(ctx context.Context) error {
		errs = link.Send(ctx, []kafka.Record{{Topic: cfg.TopicChanges, Key: "1", Value: []byte(`{"flid":1}`)}})
		return nil
	}))
	require.Equal(t, []error{nil}, errs)
	recs := b.read(t, cfg.TopicChanges)
	require.Len(t, recs, 1)
	require.Equal(t, `{"flid":1}`, string(recs[0].Value))

	other, err := tlsenv.NewCA(t.TempDir())
	require.NoError(t, err)
	for name, breakIt := range map[string]func(*kafka.Config){
		"wrong password":                         func(c *kafka.Config) { c.SASLPassword = "wrong" },
		"a CA that did not sign the certificate": func(c *kafka.Config) { c.TLSCAFile = other.CAFile },
		"plaintext":                              func(c *kafka.Config) { c.TLS = false },
		"no SASL":                                func(c *kafka.Config) { c.SASLMechanism = "" },
	} {
		bad := cfg
		bad.DialTimeout, bad.IOTimeout = 5*time.Second, 5*time.Second
		breakIt(&bad)
		p, err := kafka.Dial(bad)
		if err == nil {
			require.NoError(t, p.Close())
		}
		require.Error(t, err, name)
	}
}
