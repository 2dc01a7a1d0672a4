package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/msgx/msgx/pkg/dev/apachekafka"
	"github.com/msgx/msgx/pkg/dev/kafkatest"
	"github.com/msgx/msgx/pkg/dev/testdb"
	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/obs"
	"github.com/msgx/msgx/pkg/outbox"
)

// TestNoTopicIsCreated: on Apache Kafka with its shipped auto.create.topics.enable=true, a
// dispatcher started before the topics exist creates neither of them (a broker-made state topic
// would have cleanup.policy=delete). It is not ready, /readyz and the log name the missing topic,
// msgx_kafka_topic_unusable is 1; once the platform team creates the topics it sends, without a
// restart.
func TestNoTopicIsCreated(t *testing.T) {
	t.Parallel()
	c := kafkatest.Apache(t)
	admin := adminClient(t, c)
	require.Equal(t, "true", brokerConfig(t, admin, "auto.create.topics.enable"), "the broker's shipped default")

	db := testdb.New(t)
	cfg := topicTestConfig(t, db, c, "nocreate")
	n := enqueue(t, db, 5, 2)
	srv, done, cancel := startDispatcher(t, cfg)

	body := waitNotReady(t, srv, "topic missing: "+cfg.Kafka.TopicState)
	require.Contains(t, body, "create it as docs/kafka.md says")
	metrics := get(t, srv, "/metrics")
	require.Contains(t, metrics, `msgx_kafka_topic_unusable{topic="`+cfg.Kafka.TopicState+`"} 1`)
	require.Contains(t, metrics, `msgx_kafka_topic_unusable{topic="`+cfg.Kafka.TopicChanges+`"} 1`)
	require.Contains(t, metrics, `msgx_kafka_topic_unusable{topic="`+cfg.Kafka.TopicHeartbeat+`"} 1`)
	require.Empty(t, existingTopics(t, admin, cfg.Kafka.TopicChanges, cfg.Kafka.TopicState, cfg.Kafka.TopicHeartbeat), "no msgx client creates a topic")
	require.Zero(t, sentCount(t, db))

	ctx := context.Background()
	require.NoError(t, c.CreateTopic(ctx, cfg.Kafka.TopicChanges, kafkatest.Partitions, nil))
	require.NoError(t, c.CreateTopic(ctx, cfg.Kafka.TopicState, kafkatest.Partitions, map[string]string{"cleanup.policy": "compact"}))
	require.NoError(t, c.CreateTopic(ctx, cfg.Kafka.TopicHeartbeat, 1, nil))
	require.Eventually(t, func() bool { return sentCount(t, db) == n }, time.Minute, 50*time.Millisecond, "sends once the topics exist")
	require.Contains(t, get(t, srv, "/metrics"), `msgx_kafka_topic_unusable{topic="`+cfg.Kafka.TopicState+`"} 0`)
	cancel()
	require.NoError(t, <-done)
}

// TestStateTopicNotCompacted: a state topic with cleanup.policy=delete keeps the dispatcher from
// publishing: not ready, the error names the topic and the fix, nothing reaches the topic; once
// the policy is compact it sends.
func TestStateTopicNotCompacted(t *testing.T) {
	t.Parallel()
	c := kafkatest.Apache(t)
	admin := adminClient(t, c)
	db := testdb.New(t)
	cfg := topicTestConfig(t, db, c, "deletepolicy")
	ctx := context.Background()
	require.NoError(t, c.CreateTopic(ctx, cfg.Kafka.TopicChanges, kafkatest.Partitions, nil))
	require.NoError(t, c.CreateTopic(ctx, cfg.Kafka.TopicState, kafkatest.Partitions, map[string]string{"cleanup.policy": "delete"}))
	require.NoError(t, c.CreateTopic(ctx, cfg.Kafka.TopicHeartbeat, 1, nil))
	n := enqueue(t, db, 5, 2)
	require.NoError(t, outbox.Enqueue(ctx, db.Pool, t0,
		event.Event{Target: event.TargetSchd, FLID: 1, Type: event.Upsert, StateVersion: 2, Payload: json.RawMessage(`{"flid":1}`)}))
	srv, done, cancel := startDispatcher(t, cfg)

	body := waitNotReady(t, srv, cfg.Kafka.TopicState+" has cleanup.policy=delete, want compact")
	require.Contains(t, body, "--add-config cleanup.policy=compact")
	metrics := get(t, srv, "/metrics")
	require.Contains(t, metrics, `msgx_kafka_topic_unusable{topic="`+cfg.Kafka.TopicState+`"} 1`)
	require.Contains(t, metrics, `msgx_kafka_topic_unusable{topic="`+cfg.Kafka.TopicChanges+`"} 0`)
	require.Zero(t, sentCount(t, db))
	require.Empty(t, kafkatest.ConsumeAll(t, c.Addrs(), cfg.Kafka.TopicState, time.Minute), "nothing published to the state topic")

	alterTopicConfig(t, admin, cfg.Kafka.TopicState, "cleanup.policy", "compact")
	require.Eventually(t, func() bool { return sentCount(t, db) == n+1 }, time.Minute, 50*time.Millisecond, "sends once compacted")
	cancel()
	require.NoError(t, <-done)
}

// topicTestConfig is the dispatcher's configuration for the shared real broker with topics of
// its own (prefix) that do not exist yet.
func topicTestConfig(t *testing.T, db *testdb.DB, c *apachekafka.Cluster, prefix string) Config {
	t.Helper()
	cfg := testConfig(t, db, c.Addrs())
	cfg.Kafka.TopicChanges, cfg.Kafka.TopicState, cfg.Kafka.TopicHeartbeat = prefix+".changes", prefix+".state", prefix+".heartbeat"
	cfg.Kafka.TxnIDPrefix = "msgx-" + prefix
	return cfg
}

func startDispatcher(t *testing.T, cfg Config) (*obs.Server, <-chan error, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	srvc := make(chan *obs.Server, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, zerolog.Nop(), obs.NewRegistry(), func(s *obs.Server) { srvc <- s }) }()
	t.Cleanup(cancel)
	return <-srvc, done, cancel
}

// waitNotReady waits until /readyz answers 503 with a body that contains want. (Until the
// leader's term has dialled and checked the topics, /readyz asks only whether a broker answers.)
func waitNotReady(t *testing.T, srv *obs.Server, want string) string {
	t.Helper()
	var body string
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + srv.Addr() + "/readyz")
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		return resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(body, want)
	}, time.Minute, 50*time.Millisecond, "readyz never named %q", want)
	return body
}

func get(t *testing.T, srv *obs.Server, path string) string {
	t.Helper()
	resp, err := http.Get("http://" + srv.Addr() + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

func adminClient(t *testing.T, c *apachekafka.Cluster) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(c.ClientOpts()...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// brokerConfig reads one of the first broker's settings.
func brokerConfig(t *testing.T, cl *kgo.Client, name string) string {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeBroker, "1", []string{name}
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(context.Background(), cl)
	require.NoError(t, err)
	require.Len(t, resp.Resources, 1)
	require.NoError(t, kerr.ErrorForCode(resp.Resources[0].ErrorCode))
	for _, c := range resp.Resources[0].Configs {
		if c.Name == name && c.Value != nil {
			return *c.Value
		}
	}
	t.Fatalf("broker setting %s not returned", name)
	return ""
}

// existingTopics lists which of topics the cluster has, asking without allowing creation.
func existingTopics(t *testing.T, cl *kgo.Client, topics ...string) []string {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = false
	for _, name := range topics {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, mt)
	}
	resp, err := req.RequestWith(context.Background(), cl)
	require.NoError(t, err)
	var out []string
	for _, tm := range resp.Topics {
		if tm.ErrorCode == 0 {
			out = append(out, *tm.Topic)
		}
	}
	return out
}

func alterTopicConfig(t *testing.T, cl *kgo.Client, topic, name, value string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value, c.Op = name, kmsg.StringPtr(value), kmsg.IncrementalAlterConfigOpSet
	r.Configs = append(r.Configs, c)
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(context.Background(), cl)
	require.NoError(t, err)
	require.Len(t, resp.Resources, 1)
	require.NoError(t, kerr.ErrorForCode(resp.Resources[0].ErrorCode))
}
