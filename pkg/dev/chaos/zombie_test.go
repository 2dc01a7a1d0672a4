package chaos

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/stack"
	"github.com/msgx/msgx/pkg/dev/verify"
)

// zombieProblems names a deposed leader's record, a version or epoch going back, and a missing
// version; a clean history has none.
func TestZombieProblems(t *testing.T) {
	rec := func(topic string, v, epoch int64) stack.Record {
		return stack.Record{Topic: topic, FLID: "200000", StateVersion: v, Epoch: epoch}
	}
	deposed := map[string]int64{"200000": 1}
	clean := []stack.Record{
		rec(verify.TopicChanges, 1, 2), rec(verify.TopicChanges, 2, 2), rec(verify.TopicChanges, 3, 2), rec(verify.TopicChanges, 4, 3),
		rec(verify.TopicState, 1, 2), rec(verify.TopicState, 3, 2), rec(verify.TopicState, 4, 3),
	}
	require.Empty(t, zombieProblems(clean, deposed))

	zombie := append(append([]stack.Record{}, clean[:3]...), rec(verify.TopicChanges, 1, 1), clean[3])
	zombie = append(zombie, clean[4:]...)
	require.ElementsMatch(t, []string{
		"msgx.flight.changes FLID 200000: v1 of the deposed leader's epoch 1 (offset 0)",
		"msgx.flight.changes FLID 200000: v1 (epoch 1) after v3 (epoch 2)",
		"msgx.flight.changes FLID 200000: epoch 1 after epoch 2",
		"msgx.flight.changes FLID 200000: versions [1 2 3 1 4], want [1 2 3 4]",
	}, zombieProblems(zombie, deposed))

	stale := append(append([]stack.Record{}, clean...), rec(verify.TopicState, 3, 3))
	require.ElementsMatch(t, []string{
		"msgx.flight.state FLID 200000: v3 (epoch 3) after v4 (epoch 3)",
		"msgx.flight.state FLID 200000: last version 3, want 4",
	}, zombieProblems(stale, deposed))
}
