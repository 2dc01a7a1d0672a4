package k8s_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

const observability = "../observability"

// exportedMetrics are the metric names the service module defines: every "msgx_…" string
// literal in its non-test Go files (prometheus Opts Name fields and helpers that take the name).
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	lit := regexp.MustCompile(`"(msgx_[a-z0-9_]+)"`)
	out := map[string]bool{}
	for _, dir := range []string{"pkg", "cmd"} {
		err := filepath.WalkDir(filepath.Join(repoRoot, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if !strings.Contains(string(b), "prometheus") {
				return nil
			}
			for _, m := range lit.FindAllStringSubmatch(string(b), -1) {
				out[m[1]] = true
			}
			return nil
		})
		require.NoError(t, err)
	}
	require.True(t, out["msgx_leader"], "msgx_leader not found in pkg/daemon")
	return out
}

var metricRef = regexp.MustCompile(`\bmsgx_[a-z0-9_]+`)

// checkMetricNames fails for a name in expr the binaries do not export (histogram series may
// carry _bucket, _sum or _count).
func checkMetricNames(t *testing.T, id, expr string, exported map[string]bool) {
	t.Helper()
	for _, name := range metricRef.FindAllString(expr, -1) {
		base := name
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if trimmed, ok := strings.CutSuffix(name, suffix); ok && exported[trimmed] {
				base = trimmed
			}
		}
		require.True(t, exported[base], "%s: metric %s is not exported by any binary", id, name)
	}
}

// runbookAnchors are the GitHub anchors of docs/runbook.md's headings.
func runbookAnchors(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "runbook.md"))
	require.NoError(t, err)
	out := map[string]bool{}
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		out[strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(h), ""), " ", "-")] = true
	}
	return out
}

type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Expr        string            `json:"expr"`
			For         string            `json:"for,omitempty"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

// TestAlertRules: the rules file has every alert the operations issue asks for, each with a
// severity, a summary and a runbook_url whose anchor is a heading of docs/runbook.md, and its
// expressions use only metrics the binaries export.
func TestAlertRules(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(observability, "alerts.yaml"))
	require.NoError(t, err)
	var rf ruleFile
	require.NoError(t, yaml.UnmarshalStrict(b, &rf))
	exported := exportedMetrics(t)
	anchors := runbookAnchors(t)

	var names []string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			id := "alert " + r.Alert
			require.NotEmpty(t, r.Alert, "group %s: only alerting rules here", g.Name)
			names = append(names, r.Alert)
			checkMetricNames(t, id, r.Expr, exported)
			require.Contains(t, []string{"critical", "warning"}, r.Labels["severity"], id)
			require.NotEmpty(t, r.Annotations["summary"], id)
			url := r.Annotations["runbook_url"]
			base, anchor, ok := strings.Cut(url, "#")
			require.True(t, ok, "%s: runbook_url needs an anchor", id)
			require.True(t, strings.HasSuffix(base, "/docs/runbook.md"), "%s: runbook_url %s", id, url)
			require.True(t, anchors[anchor], "%s: docs/runbook.md has no heading for #%s", id, anchor)
		}
	}
	require.Subset(t, names, []string{
		"MsgxHeadStuck", "MsgxWatermarkStalled", "MsgxGapOlderThanCommitDelay", "MsgxDeadGrowing",
		"MsgxContentDiffers", "MsgxBackfillAbandoned", "MsgxDispatcherOldestPending",
		"MsgxJobHeartbeatStale", "MsgxNoLeader", "MsgxRequestExpired",
	})
	require.Len(t, names, len(uniq(names)), "alert names repeat")
}

func uniq(s []string) map[string]bool {
	out := map[string]bool{}
	for _, v := range s {
		out[v] = true
	}
	return out
}

// TestDashboard: the Grafana dashboard is valid JSON, every query uses exported metrics only,
// and the panels the operations issue asks for are there.
func TestDashboard(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(observability, "dashboard.json"))
	require.NoError(t, err)
	var d struct {
		Title  string `json:"title"`
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(b, &d))
	require.NotEmpty(t, d.UID)
	exported := exportedMetrics(t)
	used := map[string]bool{}
	for _, p := range d.Panels {
		require.NotEmpty(t, p.Title)
		if p.Type == "row" {
			continue
		}
		require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		for _, tg := range p.Targets {
			checkMetricNames(t, "panel "+p.Title, tg.Expr, exported)
			for _, m := range metricRef.FindAllString(tg.Expr, -1) {
				used[m] = true
			}
		}
	}
	for _, m := range []string{
		"msgx_ingest_watermark", "msgx_ingest_open_gaps", "msgx_ingest_oldest_gap_age_seconds", // watermark and gaps
		"msgx_pump_head_age_seconds", "msgx_pump_backlog", // head age and backlog
		"msgx_pump_processed_total",                                         // outcomes and dead letters by class
		"msgx_dispatch_pending", "msgx_dispatch_oldest_pending_age_seconds", // per target
		"msgx_pipeline_backfill_oldest_unmarked_seconds", "msgx_pipeline_backfill_abandoned_markers", // backfill
		"msgx_pipeline_job_heartbeat_age_seconds", // job heartbeats
		"msgx_leader",                                                                    // leader per role
		"msgx_requests_open", "msgx_requests_oldest_open_seconds", "msgx_requests_total", // requests to the AODB
		"msgx_end_to_end_lag_seconds_bucket",                                     // mailbox → Kafka ack
		"msgx_pg_pool_acquired_connections", "msgx_pg_pool_empty_acquires_total", // PostgreSQL pools
		"msgx_kafka_request_latency_seconds", "msgx_kafka_outgoing_bytes_total", // Kafka client
		"msgx_http_request_duration_seconds_bucket", // API latency
	} {
		require.True(t, used[m], "the dashboard does not show %s", m)
	}
}
