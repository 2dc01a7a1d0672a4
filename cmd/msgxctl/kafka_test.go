package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/cmdline"
	"github.com/msgx/msgx/pkg/config"
	"github.com/msgx/msgx/pkg/dev/apachekafka"
	"github.com/msgx/msgx/pkg/dev/kafkatest"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/flightstore"
	"github.com/msgx/msgx/pkg/jobs"
	"github.com/msgx/msgx/pkg/kafka"
)

// kafka verify against the development broker: the dispatcher's records of what PostgreSQL
// says was sent pass; an older state written last and a SENT change never written exit 1,
// each named.
func TestKafkaVerify(t *testing.T) {
	t.Parallel()
	_, kcfg := kafkatest.Broker(t)
	checkKafkaVerify(t, kcfg)
}

// kafka verify and kafka reseed against a real broker (one, for both).
func TestRealBrokerKafkaVerifyAndReseed(t *testing.T) {
	t.Parallel()
	c := apachekafka.Start(t, apachekafka.Options{})
	t.Run("verify", func(t *testing.T) {
		t.Parallel()
		kcfg := kafkatest.Config(c.Addrs())
		require.NoError(t, kafka.EnsureTopics(kcfg, kafkatest.Partitions))
		checkKafkaVerify(t, kcfg)
	})
	t.Run("reseed", func(t *testing.T) {
		t.Parallel()
		checkKafkaReseed(t, c)
	})
}

// verifyDB is flight 100 (version 2, both changes and its state sent) and flight 101 (deleted
// at version 1: its change and a tombstone sent), as the dispatcher leaves them.
func verifyDB(t *testing.T, kcfg kafka.Config) (config.Config, *testdb.DB) {
	t.Helper()
	db, cfg := ctlDB(t, "Asia/Shanghai")
	for _, q := range []string{
		`INSERT INTO flight (flid, alcd, flno, mvin, sodt, operation_day, state, state_version, created_at, updated_at)
		  VALUES (100, 'CA', 'CA100', 'D', '2021-01-23 08:00', '2021-01-23', 'ACTIVE', 2, now(), now()),
		         (101, 'MU', 'MU101', 'D', '2021-01-23 09:00', '2021-01-23', 'DELETED', 1, now(), now())`,
		`INSERT INTO msg_event (event_id, target, partition_key, event_type, state_version, msg_id, body, status, created_at, sent_at) VALUES
		  (1, 'KAFKA:msg', '100', 'UPSERT', 1, 7, '{"flid":100,"state_version":1}', 'SENT', '2021-01-23 00:10:00+00', now()),
		  (2, 'KAFKA:msg', '100', 'UPSERT', 2, 8, '{"flid":100,"state_version":2}', 'SENT', '2021-01-23 00:20:00+00', now()),
		  (3, 'KAFKA:msg', '101', 'TOMBSTONE', 1, 9, '{"flid":101,"state_version":1}', 'SENT', '2021-01-23 00:30:00+00', now())`,
		`INSERT INTO msg_state_sent (partition_key, state_version, sent_at) VALUES ('100', 2, now()), ('101', 1, now())`,
	} {
		_, err := db.Pool.Exec(context.Background(), q)
		require.NoError(t, err, q)
	}
	cfg.Kafka, cfg.Jobs = kcfg, jobs.Config{EventRetention: 168 * time.Hour}
	return cfg, db
}

// send writes the records of claimed events as the dispatcher does (event.Record, one
// transaction per topic).
func send(t *testing.T, p *kafka.Producer, topic string, cs ...event.Claimed) {
	t.Helper()
	var recs []kafka.Record
	for _, c := range cs {
		r := event.Record(c, 1)
		rec := kafka.Record{Topic: topic, Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			rec.Headers = append(rec.Headers, kafka.Header{Key: h.Key, Value: h.Value})
		}
		recs = append(recs, rec)
	}
	for _, err := range p.Send(context.Background(), recs) {
		require.NoError(t, err)
	}
}

// sentAt is the event time of verifyDB's records.
var sentAt = time.Date(2021, 1, 23, 0, 10, 0, 0, time.UTC)

// changeRec and stateRec are claimed events of the changes and the state topic.
func changeRec(id int64, flid string, v int64, typ, body string) event.Claimed {
	return event.Claimed{EventID: id, Target: event.TargetMsg, FLID: flid, Type: typ, StateVersion: v, MsgID: 6 + id, Payload: []byte(body), CreatedAt: sentAt}
}

func stateRec(id int64, flid string, v int64, typ string, value []byte) event.Claimed {
	return event.Claimed{EventID: id, Target: event.TargetSchd, FLID: flid, Type: typ, StateVersion: v, Payload: value, CreatedAt: sentAt}
}

func checkKafkaVerify(t *testing.T, kcfg kafka.Config) {
	t.Helper()
	ctx := context.Background()
	cfg, db := verifyDB(t, kcfg)
	p := dialReady(t, kcfg)
	defer p.Close()
	change, state := changeRec, stateRec
	send(t, p, kcfg.TopicChanges, change(1, "100", 1, event.Upsert, `{"flid":100,"state_version":1}`),
		change(2, "100", 2, event.Upsert, `{"flid":100,"state_version":2}`))
	send(t, p, kcfg.TopicChanges, change(3, "101", 1, event.Tombstone, `{"flid":101,"state_version":1}`))
	f100, err := flightstore.Read(ctx, db.Pool, 100)
	require.NoError(t, err)
	send(t, p, kcfg.TopicState, state(10, "100", 1, event.Upsert, []byte(`{"flid":100,"state_version":1}`)),
		state(11, "100", 2, event.Upsert, f100.AppendJSONIn(nil, cfg.Location())), state(12, "101", 1, event.Tombstone, nil))

	var out, errOut bytes.Buffer
	require.Equal(t, 0, cmdline.Exit(&errOut, "msgxctl", kafkaCmd(ctx, cfg, []string{"verify"}, &out)), errOut.String()+out.String())
	require.Contains(t, out.String(), kcfg.TopicChanges+": 3 records read; 3 SENT events compared, 3 found with their value (0 identical duplicates)\n")
	require.Contains(t, out.String(), kcfg.TopicState+": 3 records read, 2 flights; 2 compared with their stored state, 2 agree\n")
	require.Contains(t, out.String(), "Kafka agrees with PostgreSQL: no difference\n")

	// Tamper: an older state of flight 100 written last; a SENT change of flight 102 never written.
	send(t, p, kcfg.TopicState, state(10, "100", 1, event.Upsert, []byte(`{"flid":100,"state_version":1}`)))
	_, err = db.Pool.Exec(ctx, `INSERT INTO msg_event (event_id, target, partition_key, event_type, state_version, body, status, created_at, sent_at)
		VALUES (4, 'KAFKA:msg', '102', 'UPSERT', 1, '{}', 'SENT', now(), now())`)
	require.NoError(t, err)
	out.Reset()
	errOut.Reset()
	require.Equal(t, 1, cmdline.Exit(&errOut, "msgxctl", kafkaCmd(ctx, cfg, []string{"verify"}, &out)))
	require.Equal(t, "msgxctl: kafka verify: 3 difference(s) between Kafka and PostgreSQL\n", errOut.String())
	require.Regexp(t, `(?m)^change-missing\s+`+kcfg.TopicChanges+`\s+102\s+1\s+-\s+event 4 is SENT in PostgreSQL$`, out.String())
	require.Regexp(t, `(?m)^state-behind\s+`+kcfg.TopicState+`\s+100\s+1\s+\d+@\d+\s+the last record is version 1; PostgreSQL sent version 2$`, out.String())

	out.Reset()
	require.Error(t, kafkaCmd(ctx, cfg, []string{"verify", "--json"}, &out))
	var doc struct {
		Changes     map[string]any   `json:"changes"`
		Differences []map[string]any `json:"differences"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc), out.String())
	require.Equal(t, float64(4), doc.Changes["sent_events"])
	var kinds []any
	for _, d := range doc.Differences {
		kinds = append(kinds, d["kind"])
	}
	require.ElementsMatch(t, []any{"change-missing", "out-of-order", "state-behind"}, kinds)
}

// A bad command line and a topic that does not exist exit 2.
func TestKafkaVerifyUsage(t *testing.T) {
	t.Parallel()
	_, kcfg := kafkatest.Broker(t)
	kcfg.TopicState = "no.such.topic"
	cfg, _ := verifyDB(t, kcfg)
	ctx := context.Background()
	for _, args := range [][]string{nil, {"check"}, {"verify", "extra"}, {"verify", "--timeout", "0s"}, {"verify"}} {
		var out, errOut bytes.Buffer
		require.Equal(t, 2, cmdline.Exit(&errOut, "msgxctl", kafkaCmd(ctx, cfg, args, &out)), "%q: %s", args, errOut.String())
	}
	var out bytes.Buffer
	require.Equal(t, 0, cmdline.Exit(&out, "msgxctl", kafkaCmd(ctx, cfg, []string{"verify", "-h"}, &out)))
	require.Contains(t, out.String(), "usage: msgxctl kafka verify")
}

// dialReady dials c's producers, again while a fresh broker's transaction coordinator is still
// loading (COORDINATOR_LOAD_IN_PROGRESS answers the first InitProducerId of a new cluster for a
// while on a loaded machine), for at most 30 s.
func dialReady(t *testing.T, c kafka.Config) *kafka.Producer {
	t.Helper()
	var p *kafka.Producer
	var err error
	require.Eventually(t, func() bool {
		p, err = kafka.Dial(c)
		return err == nil || !kafka.Unavailable(err)
	}, 30*time.Second, 100*time.Millisecond, "the broker's coordinator is still loading")
	require.NoError(t, err)
	return p
}
