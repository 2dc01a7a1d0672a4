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
// topic is compacted. A missing topic is a configuration error (ErrTopicMissing).
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

func checkTopics(admin sarama.ClusterAdmin, c Config) ([]TopicInfo, error) {
	meta, err := admin.DescribeTopics(c.Topics())
	if err != nil {
		return nil, &Error{Op: "describe topics", Err: err}
	}
	var infos []TopicInfo
	var errs []error
	for _, tm := range meta {
		if errors.Is(tm.Err, sarama.ErrUnknownTopicOrPartition) {
			errs = append(errs, fmt.Errorf("%w: %s (create it, or set MSGX_KAFKA_TOPIC_CHANGES / MSGX_KAFKA_TOPIC_STATE)", ErrTopicMissing, tm.Name))
			continue
		}
		if tm.Err != sarama.ErrNoError {
			errs = append(errs, &Error{Op: "describe topic " + tm.Name, Err: tm.Err})
			continue
		}
		if len(tm.Partitions) == 0 {
			errs = append(errs, fmt.Errorf("%w: %s has no partitions", ErrTopicMissing, tm.Name))
			continue
		}
		info := TopicInfo{Name: tm.Name, Partitions: len(tm.Partitions)}
		entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: tm.Name, ConfigNames: []string{"cleanup.policy"}})
		if err == nil {
			for _, e := range entries {
				if e.Name == "cleanup.policy" {
					info.CleanupPolicy = e.Value
				}
			}
		}
		infos = append(infos, info)
	}
	return infos, errors.Join(errs...)
}

// EnsureTopics is the admin step of development and tests: it creates the two topics when
// missing (the state topic compacted) with the given partition count. Production topics are
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
	for _, t := range []struct {
		name    string
		configs map[string]*string
	}{
		{c.TopicChanges, nil},
		{c.TopicState, map[string]*string{"cleanup.policy": &compact}},
	} {
		err := admin.CreateTopic(t.name, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1, ConfigEntries: t.configs}, false)
		if err != nil && !errors.Is(err, sarama.ErrTopicAlreadyExists) {
			return &Error{Op: "create topic " + t.name, Err: err}
		}
	}
	return nil
}
