package contract_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/docs"
	"github.com/msgx/msgx/pkg/contract"
	"github.com/msgx/msgx/pkg/event"
	"github.com/msgx/msgx/pkg/flight"
)

var update = flag.Bool("update", false, "write docs/contract from the flight model and the record format")

const dir = "../../docs/contract"

// TestDocumentsAreCurrent: the committed documents are what the flight model and the record
// format make of them (go test ./pkg/contract -update writes them), and none is left over.
func TestDocumentsAreCurrent(t *testing.T) {
	t.Parallel()
	want := contract.Documents()
	if *update {
		for name, b := range want {
			require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
		}
	}
	seen := 0
	require.NoError(t, fs.WalkDir(docs.Contract, "contract", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name := strings.TrimPrefix(path, "contract/")
		b, err := fs.ReadFile(docs.Contract, path)
		require.NoError(t, err)
		require.Contains(t, want, name, "docs/contract/%s is made by nothing", name)
		require.Equal(t, string(want[name]), string(b), "docs/contract/%s is not current: go test ./pkg/contract -update", name)
		seen++
		return nil
	}))
	require.Equal(t, len(want), seen, "every document is in docs/contract")
}

func validator(t *testing.T) *contract.Validator {
	t.Helper()
	v, err := contract.NewValidator()
	require.NoError(t, err)
	return v
}

// TestExamplesValidate: the complete example values validate, and so does every JSON example of
// docs/events.md; an abridged one (with …) names the complete example beside it.
func TestExamplesValidate(t *testing.T) {
	t.Parallel()
	v := validator(t)
	for name, schema := range map[string]string{
		contract.ExampleState: contract.StateSchema, contract.ExampleChange: contract.ChangesSchema,
		contract.ExamplePurged: contract.ChangesSchema, contract.ExampleChildPurged: contract.ChangesSchema,
		contract.ExampleHeartbeat: contract.BeatSchema,
	} {
		b, err := fs.ReadFile(docs.Contract, "contract/"+name)
		require.NoError(t, err)
		require.NoError(t, v.Value(schema, b), name)
	}
	text, err := os.ReadFile("../../docs/events.md")
	require.NoError(t, err)
	blocks := regexp.MustCompile("(?s)```json\n(.*?)```").FindAllStringSubmatch(string(text), -1)
	require.GreaterOrEqual(t, len(blocks), 4)
	full, abridged := 0, 0
	for _, b := range blocks {
		body := b[1]
		if strings.Contains(body, "…") {
			abridged++
			continue
		}
		var top map[string]any
		require.NoError(t, json.Unmarshal([]byte(body), &top), "docs/events.md example:\n%s", body)
		schema := contract.ChangesSchema
		if _, ok := top["mafl"]; ok {
			schema = contract.StateSchema
		}
		if _, ok := top["period_seconds"]; ok {
			schema = contract.BeatSchema
		}
		require.NoError(t, v.Value(schema, []byte(body)), "docs/events.md example:\n%s", body)
		full++
	}
	require.GreaterOrEqual(t, full, 3)
	require.True(t, strings.Contains(string(text), "contract/"+contract.ExampleState), "the abridged state example of docs/events.md points to the complete one")
	t.Logf("docs/events.md: %d examples validated, %d abridged", full, abridged)
}

// TestRecordsThatBreakTheContractFail: the validator refuses what a consumer could not rely on.
func TestRecordsThatBreakTheContractFail(t *testing.T) {
	t.Parallel()
	v := validator(t)
	state, err := fs.ReadFile(docs.Contract, "contract/"+contract.ExampleState)
	require.NoError(t, err)
	changeValue, err := fs.ReadFile(docs.Contract, "contract/"+contract.ExampleChange)
	require.NoError(t, err)
	headers := func(extra ...event.Header) []event.Header {
		return append([]event.Header{{Key: event.HeaderSchemaVersion, Value: "1"}, {Key: event.HeaderEventTime, Value: "2026-12-02T02:41:07.123456Z"},
			{Key: event.HeaderEventID, Value: "1099511627777"}, {Key: event.HeaderFLID, Value: "20261202001234"},
			{Key: event.HeaderStateVersion, Value: "7"}, {Key: event.HeaderEpoch, Value: "3"}, {Key: event.HeaderEventType, Value: "UPSERT"}}, extra...)
	}
	require.NoError(t, v.Record(contract.TopicState, "20261202001234", headers(), state))
	require.NoError(t, v.Record(contract.TopicChanges, "20261202001234", headers(event.Header{Key: event.HeaderMsgID, Value: "884211"}), changeValue))
	beat, err := fs.ReadFile(docs.Contract, "contract/"+contract.ExampleHeartbeat)
	require.NoError(t, err)
	beatHeaders := []event.Header{{Key: event.HeaderSchemaVersion, Value: "1"}, {Key: event.HeaderEpoch, Value: "3"}}
	require.NoError(t, v.Record(contract.TopicHeartbeat, "msgx-dispatcher", beatHeaders, beat))

	for name, c := range map[string]struct {
		topic, key string
		headers    []event.Header
		value      []byte
	}{
		"an instant without offset": {contract.TopicState, "20261202001234", headers(),
			bytes.Replace(state, []byte(`"2026-12-02T10:30:00+08:00"`), []byte(`"2026-12-02T10:30:00"`), 1)},
		"a time without its instant": {contract.TopicState, "20261202001234", headers(),
			bytes.Replace(state, []byte(`"sodt_instant"`), []byte(`"sodt_moment"`), 1)},
		"a wall time with a zone": {contract.TopicState, "20261202001234", headers(),
			bytes.Replace(state, []byte(`"sodt": "2026-12-02T10:30:00"`), []byte(`"sodt": "2026-12-02T10:30:00Z"`), 1)},
		"a field missing":         {contract.TopicState, "20261202001234", headers(), bytes.Replace(state, []byte(`"stnd"`), []byte(`"stand"`), 1)},
		"an unknown state":        {contract.TopicState, "20261202001234", headers(), bytes.Replace(state, []byte(`"ACTIVE"`), []byte(`"ON"`), 1)},
		"a key that is no FLID":   {contract.TopicState, "CA1234", headers(), state},
		"a schema version of v2":  {contract.TopicState, "20261202001234", append(headers()[1:], event.Header{Key: event.HeaderSchemaVersion, Value: "2"}), state},
		"a header missing":        {contract.TopicState, "20261202001234", headers()[1:], state},
		"a header twice":          {contract.TopicState, "20261202001234", headers(event.Header{Key: event.HeaderEpoch, Value: "4"}), state},
		"an event time not UTC":   {contract.TopicState, "20261202001234", append(headers()[2:], headers()[0], event.Header{Key: event.HeaderEventTime, Value: "2026-12-02T10:41:07+08:00"}), state},
		"an UPSERT's null state":  {contract.TopicState, "20261202001234", headers(), nil},
		"a change without msg_id": {contract.TopicChanges, "20261202001234", headers(), bytes.Replace(changeValue, []byte(`"msg_id"`), []byte(`"message"`), 1)},
		"an unknown topic":        {"msgx.flight.other", "20261202001234", headers(), changeValue},
		"a heartbeat without its time": {contract.TopicHeartbeat, "msgx-dispatcher", beatHeaders,
			bytes.Replace(beat, []byte(`"time"`), []byte(`"at"`), 1)},
		"a heartbeat of schema version 2": {contract.TopicHeartbeat, "msgx-dispatcher", beatHeaders[1:], beat},
	} {
		require.Error(t, v.Record(c.topic, c.key, c.headers, c.value), name)
	}
}

// TestAsyncAPIParses: the AsyncAPI document passes the AsyncAPI project's own parser
// (@asyncapi/parser, installed by scripts/ensure-asyncapi.sh into tools/asyncapi) without an
// error or a warning.
func TestAsyncAPIParses(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the AsyncAPI document is not parsed (apt-get install nodejs; then scripts/ensure-asyncapi.sh)")
	}
	tools := "../../tools/asyncapi"
	if _, err := os.Stat(filepath.Join(tools, "node_modules", "@asyncapi", "parser")); err != nil {
		t.Fatalf("@asyncapi/parser is not installed in tools/asyncapi: run scripts/ensure-asyncapi.sh (make setup does)")
	}
	doc, err := filepath.Abs(filepath.Join(dir, contract.AsyncAPI))
	require.NoError(t, err)
	out, err := exec.Command(node, filepath.Join(tools, "check.mjs"), doc).CombinedOutput()
	require.NoError(t, err, "the AsyncAPI parser refused docs/contract/%s:\n%s", contract.AsyncAPI, out)
	t.Logf("%s", bytes.TrimSpace(out))

	bad := filepath.Join(t.TempDir(), "bad.json")
	b, err := os.ReadFile(doc)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bad, bytes.Replace(b, []byte(`"action": "send"`), []byte(`"action": "publish"`), 1), 0o644))
	out, err = exec.Command(node, filepath.Join(tools, "check.mjs"), bad).CombinedOutput()
	require.Error(t, err, "the parser must refuse a document AsyncAPI 3 does not allow:\n%s", out)
}

// TestTermsListEveryField: docs/terms.md has a row for every field of the published state and
// every column of its collections, and none for a field msgx does not publish.
func TestTermsListEveryField(t *testing.T) {
	t.Parallel()
	text, err := os.ReadFile("../../docs/terms.md")
	require.NoError(t, err)
	listed := map[string]bool{}
	quoted := regexp.MustCompile("`([^`]+)`")
	for _, line := range strings.Split(string(text), "\n") {
		cells := strings.Split(line, " | ")
		if !strings.HasPrefix(line, "| `") || len(cells) < 5 {
			continue
		}
		coll := ""
		for _, m := range quoted.FindAllStringSubmatch(cells[0], -1) {
			name := m[1]
			if c, col, ok := strings.Cut(name, "[]."); ok {
				coll, name = c, col
			}
			if coll != "" {
				name = coll + "[]." + name
			}
			require.False(t, listed[name], "docs/terms.md lists %s twice", name)
			listed[name] = true
		}
	}
	want := map[string]bool{"flid": true, "state": true, "state_version": true, "operation_day": true,
		"mafl[].flid": true, "mafl[].flno": true}
	for _, f := range flight.Fields {
		want[f.Name] = true
	}
	for _, c := range flight.Collections {
		for _, col := range c.Cols {
			want[c.Name+"[]."+col.Name] = true
		}
	}
	require.Equal(t, want, listed, "docs/terms.md: one row per published field")
}
