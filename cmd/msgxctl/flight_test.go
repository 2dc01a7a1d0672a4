package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/config"
)

// flightDB is a schema with flight 100 (CA100, version 2, SODT 08:00 airport time on
// 2021-01-23), the two versions message 7 and 8 gave it on both targets, flight 200 purged by
// the history sweep, and the msgxctl configuration for it (airport time Asia/Shanghai, +08:00).
func flightDB(t *testing.T) config.Config {
	t.Helper()
	db, cfg := ctlDB(t, "Asia/Shanghai")
	ctx := context.Background()
	for _, q := range []string{
		`INSERT INTO flight (flid, alcd, flno, mvin, sodt, stnd, operation_day, state, state_version, created_at, updated_at)
		  VALUES (100, 'CA', 'CA100', 'D', '2021-01-23 08:00', '215', '2021-01-23', 'ACTIVE', 2, now(), now()),
		         (101, 'MU', 'MU101', 'D', '2021-01-23 09:00', NULL, '2021-01-23', 'DELETED', 1, now(), now())`,
		`INSERT INTO proc_state (msg_id, status, msg_type, msg_styp, enqueued_at, finished_at) VALUES (7, 'SUCCEEDED', 'DFOE', 'NEW', now(), now()), (8, 'SUCCEEDED', 'DFUE', 'STND', now(), now())`,
		`INSERT INTO msg_event (target, partition_key, event_type, state_version, msg_id, body, status, created_at, sent_at) VALUES
		  ('KAFKA:msg', '100', 'UPSERT', 1, 7, '{}', 'SENT', '2021-01-23 00:10:00+00', '2021-01-23 00:10:01+00'),
		  ('KAFKA:schd', '100', 'UPSERT', 1, 7, '{}', 'SENT', '2021-01-23 00:10:00+00', '2021-01-23 00:10:01+00'),
		  ('KAFKA:msg', '100', 'UPSERT', 2, 8, '{}', 'PENDING', '2021-01-23 00:20:00+00', NULL)`,
		`INSERT INTO flight_history (flid, operation_day, state_version, final_state, purge_reason, purged_at)
		  VALUES (200, '2021-01-20', 4, '{"flight": {"flid": 200, "alcd": "CZ", "flno": "CZ200", "state": "ACTIVE", "state_version": 4}, "details": {}}', 'retention', '2021-01-24 19:30:00+00')`,
	} {
		_, err := db.Pool.Exec(ctx, q)
		require.NoError(t, err, q)
	}
	return cfg
}

// flight FLID shows the current state and every version with the message behind it, times in
// the airport's zone; a purged flight shows what the sweep kept; an unknown one is a failure.
func TestFlight(t *testing.T) {
	t.Parallel()
	cfg := flightDB(t)
	ctx := context.Background()
	var out bytes.Buffer
	require.NoError(t, flightCmd(ctx, cfg, []string{"100"}, &out))
	text := out.String()
	require.Contains(t, text, "flight 100 CACA100 ACTIVE, version 2, operation day 2021-01-23\n")
	require.Regexp(t, `(?m)^  stnd\s+215$`, text)
	require.Regexp(t, `(?m)^  2\s+KAFKA:msg\s+\d+\s+UPSERT\s+PENDING\s+2021-01-23T08:20:00\+08:00\s+-\s+8 DFUE STND$`, text)
	require.Regexp(t, `(?m)^  1\s+KAFKA:schd\s+\d+\s+UPSERT\s+SENT\s+2021-01-23T08:10:00\+08:00\s+2021-01-23T08:10:01\+08:00\s+7 DFOE NEW$`, text)

	out.Reset()
	require.NoError(t, flightCmd(ctx, cfg, []string{"--json", "100"}, &out))
	var doc struct {
		FLID     int64            `json:"flid"`
		State    map[string]any   `json:"state"`
		Purges   []any            `json:"purges"`
		Versions []map[string]any `json:"versions"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc), out.String())
	require.Equal(t, "2021-01-23T08:00:00", doc.State["sodt"], "the state as the read API serves it: airport wall clock")
	require.NotNil(t, doc.Purges, "[] not null")
	require.Empty(t, doc.Purges)
	require.Len(t, doc.Versions, 3)
	require.Equal(t, "2021-01-23T08:20:00+08:00", doc.Versions[0]["created_at"])
	require.Equal(t, float64(8), doc.Versions[0]["msg_id"])

	out.Reset()
	require.NoError(t, flightCmd(ctx, cfg, []string{"200"}, &out))
	require.Contains(t, out.String(), "flight 200 CZCZ200 ACTIVE, version 4")
	require.Contains(t, out.String(), "purged at version 4 on 2021-01-25T03:30:00+08:00 (operation day 2021-01-20): retention")
	require.Contains(t, out.String(), "versions: none in the outbox")

	require.ErrorContains(t, flightCmd(ctx, cfg, []string{"999"}, &out), "flight 999 not found")
}

// flights --day lists the day's flights one line each, SODT with the airport's offset; a day
// without flights is [] in JSON.
func TestFlightsOfADay(t *testing.T) {
	t.Parallel()
	cfg := flightDB(t)
	ctx := context.Background()
	var out bytes.Buffer
	require.NoError(t, flightsCmd(ctx, cfg, []string{"--day", "2021-01-23"}, &out))
	require.Regexp(t, `(?m)^100\s+CACA100\s+D\s+ACTIVE\s+2\s+2021-01-23T08:00:00\+08:00\s+-$`, out.String())
	require.Regexp(t, `(?m)^101\s+MUMU101\s+D\s+DELETED\s+1\s+2021-01-23T09:00:00\+08:00\s+-$`, out.String())

	out.Reset()
	require.NoError(t, flightsCmd(ctx, cfg, []string{"--day", "2021-01-23", "--json"}, &out))
	var list []map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &list))
	require.Len(t, list, 2)
	require.Equal(t, "2021-01-23T08:00:00+08:00", list[0]["sodt"])

	out.Reset()
	require.NoError(t, flightsCmd(ctx, cfg, []string{"--day", "2021-02-01", "--json"}, &out))
	require.Equal(t, "[]\n", out.String())
}

// show names the flights a message changed, and the version it gave each.
func TestShowNamesTheFlightsChanged(t *testing.T) {
	t.Parallel()
	cfg := flightDB(t)
	ctx := context.Background()
	var out bytes.Buffer
	require.NoError(t, showCmd(ctx, cfg, []string{"7"}, &out))
	require.Contains(t, out.String(), "flights changed: 100 (version 1)\n")

	out.Reset()
	require.NoError(t, showCmd(ctx, cfg, []string{"8", "--json"}, &out))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	require.Equal(t, []any{map[string]any{"flid": float64(100), "state_version": float64(2)}}, doc["flights"])
	require.Equal(t, []any{}, doc["audit"], "[] not null")
	require.Equal(t, []any{}, doc["attempt_history"])
}
