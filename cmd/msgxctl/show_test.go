package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/config"
)

const showXML = `<?xml version="1.0" encoding="UTF-8"?>
<MSG><META><SNDR>AODB</SNDR><TYPE>DFOE</TYPE></META><DFLT><FLID>42</FLID></DFLT></MSG>
`

// showDB is a schema with message 38 (its XML, one replay audit row) and the msgxctl
// configuration for it.
func showDB(t *testing.T) config.Config {
	t.Helper()
	db, cfg := ctlDB(t, "")
	ctx := context.Background()
	_, err := db.Pool.Exec(ctx, `INSERT INTO proc_state (msg_id, raw, raw_sha256, status, error_class, reason, attempts, next_attempt_at, msg_type, enqueued_at)
	  VALUES (38, $1, sha256(convert_to($1, 'UTF8')), 'FAILED', 'INFRA', 'mailbox down', 2, now(), 'DFOE', now())`, showXML)
	require.NoError(t, err)
	_, err = db.Pool.Exec(ctx, `INSERT INTO replay_audit (action, actor, reason, selector, ids, at) VALUES ('replay', 'ops@host', 'mailbox back', 'ids=38', '{38}', now())`)
	require.NoError(t, err)
	return cfg
}

// show 38 --raw (flags after the positional argument) prints the XML itself, byte for byte; the
// human form is the default; --json has snake_case keys everywhere, the audit entries included.
func TestShow(t *testing.T) {
	t.Parallel()
	cfg := showDB(t)
	ctx := context.Background()

	var out bytes.Buffer
	require.NoError(t, showCmd(ctx, cfg, []string{"38", "--raw"}, &out))
	require.Equal(t, showXML, out.String(), "the XML itself, not JSON-escaped")

	out.Reset()
	require.NoError(t, showCmd(ctx, cfg, []string{"38"}, &out))
	text := out.String()
	require.True(t, strings.HasPrefix(text, "message 38\n"), text)
	require.Regexp(t, `(?m)^  status\s+FAILED$`, text)
	require.Regexp(t, `(?m)^  error_class\s+INFRA$`, text)
	require.Regexp(t, `(?m)^  reason\s+mailbox down$`, text)
	require.Regexp(t, `(?m)^  attempts\s+2$`, text)
	require.Regexp(t, `(?m)^  [^ ].* replay by ops@host: mailbox back$`, text)
	require.NotContains(t, text, "{", "not JSON")
	require.Less(t, strings.Index(text, "status"), strings.Index(text, "attempts"), "the important fields first")

	out.Reset()
	require.NoError(t, showCmd(ctx, cfg, []string{"--json", "38"}, &out))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	require.Equal(t, "FAILED", doc["status"])
	audit := doc["audit"].([]any)
	require.Len(t, audit, 1)
	entry := audit[0].(map[string]any)
	require.Equal(t, "ops@host", entry["actor"])
	require.Equal(t, "replay", entry["action"])
	for k := range entry {
		require.Equal(t, strings.ToLower(k), k, "snake_case key %q", k)
	}

	out.Reset()
	require.NoError(t, showCmd(ctx, cfg, []string{"38", "--raw", "--json"}, &out))
	var raw map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &raw))
	require.Equal(t, showXML, raw["raw"])

	require.ErrorContains(t, showCmd(ctx, cfg, []string{"39"}, &out), "message 39 not found")
}

// history sweep records the request; with no jobs leader it says that the request waits for one
// (not that a leader runs it at its next tick), and --json prints JSON.
func TestHistorySweepWithoutLeader(t *testing.T) {
	t.Parallel()
	cfg := showDB(t)
	ctx := context.Background()
	var out bytes.Buffer
	require.NoError(t, historyCmd(ctx, cfg, []string{"sweep", "--actor", "tester"}, &out))
	require.Contains(t, out.String(), "no jobs leader is running")
	require.NotContains(t, out.String(), "runs it at its next tick")

	out.Reset()
	require.NoError(t, historyCmd(ctx, cfg, []string{"sweep", "--json"}, &out))
	var rep struct {
		Requested  bool           `json:"requested"`
		JobsLeader map[string]any `json:"jobs_leader"`
		Note       string         `json:"note"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &rep), out.String())
	require.True(t, rep.Requested)
	require.Nil(t, rep.JobsLeader)
	require.Contains(t, rep.Note, "waits in job_state")

	_, err := openAndExec(ctx, cfg, `INSERT INTO leader_lease (role, epoch, holder, backend_pid, acquired_at, renewed_at) VALUES ('jobs', 1, 'jobs-0:1', 0, now(), now())`)
	require.NoError(t, err)
	out.Reset()
	require.NoError(t, historyCmd(ctx, cfg, []string{"sweep"}, &out))
	require.Contains(t, out.String(), "the jobs leader jobs-0:1 runs it at its next tick")
}

func openAndExec(ctx context.Context, cfg config.Config, sql string) (int64, error) {
	pool, err := openPool(ctx, cfg)
	if err != nil {
		return 0, err
	}
	defer pool.Close()
	tag, err := pool.Exec(ctx, sql)
	return tag.RowsAffected(), err
}

// show --raw of a message whose text PostgreSQL could not hold prints the mailbox bytes
// themselves; --json gives them as base64 beside a null text, and the row says how many.
func TestShowRawBytes(t *testing.T) {
	t.Parallel()
	db, cfg := ctlDB(t, "")
	ctx := context.Background()
	mailbox := []byte("<?xml version=\"1.0\" encoding=\"Big5\"?><MSG>\xA5\x78</MSG>")
	_, err := db.Pool.Exec(ctx, `INSERT INTO proc_state (msg_id, raw, raw_bytes, raw_sha256, status, error_class, reason, attempts, next_attempt_at, enqueued_at)
	  VALUES (7, NULL, $1, sha256($1), 'FAILED', 'CODEC_ERROR', 'unsupported encoding declaration', 1, now(), now())`, mailbox)
	require.NoError(t, err)

	var out bytes.Buffer
	require.NoError(t, showCmd(ctx, cfg, []string{"7", "--raw"}, &out))
	require.Equal(t, mailbox, out.Bytes())

	out.Reset()
	require.NoError(t, showCmd(ctx, cfg, []string{"7", "--raw", "--json"}, &out))
	var raw struct {
		Raw   *string `json:"raw"`
		Bytes []byte  `json:"raw_bytes"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &raw))
	require.Nil(t, raw.Raw)
	require.Equal(t, mailbox, raw.Bytes)

	out.Reset()
	require.NoError(t, showCmd(ctx, cfg, []string{"7", "--json"}, &out))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	require.EqualValues(t, len(mailbox), doc["raw_bytes_length"])
	require.Nil(t, doc["raw_length"])
}
