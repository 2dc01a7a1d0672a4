package event_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/event"
)

// The payload bytes are the consumer contract (docs/events.md): these tests pin them.

func TestPurgedPayloads(t *testing.T) {
	t.Parallel()
	evs := event.Purged(nil, 7, 9)
	require.Equal(t, []event.Event{
		{Target: event.TargetMsg, FLID: 7, Type: event.Tombstone, StateVersion: 9,
			Payload: []byte(`{"flid":7,"event":"TOMBSTONE","reason":"purged","state_version":9}`)},
		{Target: event.TargetSchd, FLID: 7, Type: event.Tombstone, StateVersion: 9},
	}, evs)
}

func TestValidate(t *testing.T) {
	t.Parallel()
	ok := event.Event{Target: event.TargetMsg, FLID: 1, Type: event.Upsert, StateVersion: 1, Payload: []byte(`{}`)}
	require.NoError(t, ok.Validate())
	for name, e := range map[string]event.Event{
		"target":  {Target: "KAFKA:x", FLID: 1, Type: event.Upsert, StateVersion: 1, Payload: []byte(`{}`)},
		"type":    {Target: event.TargetMsg, FLID: 1, Type: "X", StateVersion: 1, Payload: []byte(`{}`)},
		"version": {Target: event.TargetMsg, FLID: 1, Type: event.Upsert, Payload: []byte(`{}`)},
		"payload": {Target: event.TargetMsg, FLID: 1, Type: event.Upsert, StateVersion: 1},
	} {
		require.Error(t, e.Validate(), name)
	}
}
