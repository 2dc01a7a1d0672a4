package kafka

import (
	"context"
	"errors"
	"fmt"

	"github.com/IBM/sarama"
)

// TopicInfo is what the start-up check learnt of one topic.
type TopicInfo struct {
	Name          string
	Partitions    int
	CleanupPolicy string
}

// CheckTopics verifies that both topics exist with at least one partition, and that the state
// topic is compacted. A missing topic wraps ErrTopicMissing, a state topic that is not
// compacted (or whose policy cannot be read) wraps ErrTopicNotCompacted; both name the topic
// and the fix. Other errors are the cluster's (asking again may succeed).
func (p *Producer) CheckTopics(_ context.Context) ([]TopicInfo, error) {
	admin, err := sarama.NewClusterAdminFromClient(p.client)
	if err != nil {
		return nil, &Error{Op: "admin", Err: err}
	}
	// Closing an admin made from a client would close the client: it is left to Close.
	return checkTopics(admin, p.cfg)
}

// ErrTopicMissing means a configured topic does not exist on the cluster.
var ErrTopicMissing = errors.New("kafka: topic missing")

// ErrTopicNotCompacted means the state topic's cleanup.policy is not compact: retention would
// delete the state of every flight that stayed quiet longer than retention.ms.
var ErrTopicNotCompacted = errors.New("kafka: state topic not compacted")

// Unusable reports whether err says a configured topic cannot take msgx's records until the
// platform team fixes it (ErrTopicMissing, ErrTopicNotCompacted).
func Unusable(err error) bool {
	return errors.Is(err, ErrTopicMissing) || errors.Is(err, ErrTopicNotCompacted)
}

// TopicError is a topic check's finding about one topic.
type TopicError struct {
	Topic string
	Err   error
}

// Error is the finding's message.
func (e *TopicError) Error() string { return e.Err.Error() }

// Unwrap gives ErrTopicMissing, ErrTopicNotCompacted or the cluster's error.
func (e *TopicError) Unwrap() error { return e.Err }

// UnusableTopics lists the topics err finds unusable (see Unusable), in the order found.
func UnusableTopics(err error) []string {
	var out []string
	var walk func(error)
	walk = func(err error) {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		var te *TopicError
		if errors.As(err, &te) && Unusable(te) {
			out = append(out, te.Topic)
		}
	}
	walk(err)
	return out
}

func checkTopics(admin sarama.ClusterAdmin, c Config) ([]TopicInfo, error) {
	meta, err := admin.DescribeTopics(c.Topics())
	if err != nil {
		return nil, &Error{Op: "describe topics", Err: err}
	}
	var infos []TopicInfo
	var errs []error
	for _, tm := range meta {
		if errors.Is(tm.Err, sarama.ErrUnknownTopicOrPartition) {
			errs = append(errs, &TopicError{tm.Name, fmt.Errorf("%w: %s (create it as docs/kafka.md says, or set MSGX_KAFKA_TOPIC_CHANGES / MSGX_KAFKA_TOPIC_STATE / MSGX_KAFKA_TOPIC_HEARTBEAT)", ErrTopicMissing, tm.Name)})
			continue
		}
		if tm.Err != sarama.ErrNoError {
			errs = append(errs, &Error{Op: "describe topic " + tm.Name, Err: tm.Err})
			continue
		}
		if len(tm.Partitions) == 0 {
			errs = append(errs, &TopicError{tm.Name, fmt.Errorf("%w: %s has no partitions", ErrTopicMissing, tm.Name)})
			continue
		}
		info := TopicInfo{Name: tm.Name, Partitions: len(tm.Partitions)}
		if tm.Name == c.TopicState {
			policy, err := cleanupPolicy(admin, tm.Name)
			if err != nil {
				errs = append(errs, &TopicError{tm.Name, err})
				continue
			}
			info.CleanupPolicy = policy
		}
		infos = append(infos, info)
	}
	return infos, errors.Join(errs...)
}

// cleanupPolicy reads topic's cleanup.policy and refuses any without compact
// ("compact,delete" keeps one record per key too, within retention: also refused).
func cleanupPolicy(admin sarama.ClusterAdmin, topic string) (string, error) {
	const fix = "kafka-configs.sh --alter --entity-type topics --entity-name %s --add-config cleanup.policy=compact"
	entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic, ConfigNames: []string{"cleanup.policy"}})
	if errors.Is(err, sarama.ErrTopicAuthorizationFailed) || errors.Is(err, sarama.ErrClusterAuthorizationFailed) {
		return "", fmt.Errorf("%w: cannot read cleanup.policy of %s: %v (grant DescribeConfigs on the topic, docs/kafka.md)", ErrTopicNotCompacted, topic, err)
	}
	if err != nil {
		return "", &Error{Op: "describe config of " + topic, Err: err}
	}
	for _, e := range entries {
		if e.Name == "cleanup.policy" {
			if e.Value != "compact" {
				return e.Value, fmt.Errorf("%w: %s has cleanup.policy=%s, want compact (fix: "+fix+")", ErrTopicNotCompacted, topic, e.Value, topic)
			}
			return e.Value, nil
		}
	}
	return "", fmt.Errorf("%w: %s: the broker did not return cleanup.policy", ErrTopicNotCompacted, topic)
}

// EnsureTopics is the admin step of development and tests: it creates the topics when missing
// (the state topic compacted) with the given partition count. Production topics are
// created by the platform team and only checked.
func EnsureTopics(c Config, partitions int32) error {
	sc, err := newSaramaConfig(c)
	if err != nil {
		return err
	}
	admin, err := sarama.NewClusterAdmin(c.Brokers, sc)
	if err != nil {
		return &Error{Op: "admin connect", Err: err}
	}
	defer admin.Close()
	compact := "compact"
	for _, name := range c.Topics() {
		var configs map[string]*string
		if name == c.TopicState {
			configs = map[string]*string{"cleanup.policy": &compact}
		}
		err := admin.CreateTopic(name, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1, ConfigEntries: configs}, false)
		if err != nil && !errors.Is(err, sarama.ErrTopicAlreadyExists) {
			return &Error{Op: "create topic " + name, Err: err}
		}
	}
	return nil
}
