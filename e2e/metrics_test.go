package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/msgx/msgx/pkg/dev/simulate"
	"github.com/msgx/msgx/pkg/dev/stack"
)

// TestAlertRulesUseExportedMetrics: after some traffic (good, duplicate, malformed
// and protocol messages, out-of-order commits and a permanent id gap that ingest skips), every
// metric name used by an expression of deploy/observability/alerts.yaml or dashboard.json is
// exported by at least one of the four running binaries: it has a series on /metrics, or its
// HELP/TYPE header is there (a metric that only gets series after an event), or it is the
// _bucket/_sum/_count series of an exported histogram or summary. Label names of selectors
// (name{label="…"}) must exist on the metric's series.
func TestAlertRulesUseExportedMetrics(t *testing.T) {
	t.Parallel()
	b := setup(t, "MSGX_MAX_COMMIT_DELAY=1s")
	ctx := context.Background()

	cfg := simulate.DefaultConfig()
	cfg.Seed, cfg.Flights, cfg.Additions, cfg.BadShare = 3, 8, 1, 0.3
	cfg.Date = airportToday(t)
	day := simulate.Generate(cfg)
	wr := b.write(t, ctx, simulate.WriterConfig{Conns: 4, Pace: simulate.PaceFast, HoldShare: 0.05, RollbackShare: 0.02, Seed: cfg.Seed}, day.Messages)
	b.waitDrained(t, maxOf(wr.IDs), time.Minute)
	t.Logf("traffic: %s; %d rolled-back ids, %d out-of-order commits", day.Summary(), len(wr.Gaps), wr.OutOfOrder)

	exported := newExposition()
	for _, name := range stack.Binaries {
		p := b.stack.Proc(name)
		require.NotNil(t, p, name)
		exported.scrape(t, name, "http://"+p.Addr+"/metrics")
	}

	root, err := stack.Root()
	require.NoError(t, err)
	exprs := alertExprs(t, filepath.Join(root, "deploy", "observability", "alerts.yaml"))
	require.NotEmpty(t, exprs)
	for id, e := range dashboardExprs(t, filepath.Join(root, "deploy", "observability", "dashboard.json")) {
		exprs[id] = e
	}

	var missing, badLabels []string
	lazy := map[string]bool{}
	used := map[string]bool{}
	ids := make([]string, 0, len(exprs))
	for id := range exprs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		expr := exprs[id]
		for _, name := range metricNames(expr) {
			used[name] = true
			switch exported.has(name) {
			case seriesSeen:
			case headerOnly:
				lazy[name] = true
			default:
				missing = append(missing, fmt.Sprintf("%s: %s is not exported by any binary%s", id, name, definedIn(t, root, name)))
			}
		}
		for _, sel := range selectors(expr) {
			for _, m := range sel.matchers {
				if exported.hasSeries(sel.name) && !exported.labels[sel.name][m.label] {
					badLabels = append(badLabels, fmt.Sprintf("%s: %s has no label %q (labels: %v)", id, sel.name, m.label, sortedKeys(exported.labels[sel.name])))
				} else if m.op == "=" && exported.hasSeries(sel.name) && !exported.values[sel.name][m.label][m.value] {
					t.Logf("%s: no series of %s{%s=%q} yet (after this traffic)", id, sel.name, m.label, m.value)
				}
			}
		}
	}
	for _, name := range sortedKeys(lazy) {
		t.Logf("%s: exported without a series yet (HELP/TYPE only: it gets series after an event)", name)
	}
	t.Logf("%d expressions, %d metric names checked against %d metric families on /metrics", len(exprs), len(used), len(exported.families))
	noProblems(t, missing, "metrics used by the alert rules or the dashboard but not exported")
	noProblems(t, badLabels, "selectors on labels the metric does not have")
}

// --- /metrics -------------------------------------------------------------------------------

// exposition is what the binaries' /metrics pages hold together.
type exposition struct {
	families map[string]string                     // metric family (HELP/TYPE) → type
	series   map[string]bool                       // series name with at least one sample
	labels   map[string]map[string]bool            // series name → label names
	values   map[string]map[string]map[string]bool // series name → label → values
}

func newExposition() *exposition {
	return &exposition{families: map[string]string{}, series: map[string]bool{},
		labels: map[string]map[string]bool{}, values: map[string]map[string]map[string]bool{}}
}

var labelPair = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

// scrape reads one /metrics page in the Prometheus text format.
func (e *exposition) scrape(t *testing.T, bin, url string) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(url)
	require.NoError(t, err, "scrape %s", bin)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "scrape %s", bin)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, typ, _ := strings.Cut(rest, " ")
			e.families[name] = typ
			continue
		}
		if rest, ok := strings.CutPrefix(line, "# HELP "); ok {
			name, _, _ := strings.Cut(rest, " ")
			if _, ok := e.families[name]; !ok {
				e.families[name] = "untyped"
			}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name := line[:strings.IndexAny(line, "{ ")]
		e.series[name] = true
		if e.labels[name] == nil {
			e.labels[name] = map[string]bool{}
			e.values[name] = map[string]map[string]bool{}
		}
		if i := strings.IndexByte(line, '{'); i >= 0 {
			j := strings.LastIndexByte(line, '}')
			for _, m := range labelPair.FindAllStringSubmatch(line[i+1:j], -1) {
				e.labels[name][m[1]] = true
				if e.values[name][m[1]] == nil {
					e.values[name][m[1]] = map[string]bool{}
				}
				e.values[name][m[1]][m[2]] = true
			}
		}
	}
	require.NoError(t, sc.Err())
}

type presence int

const (
	notExported presence = iota
	headerOnly
	seriesSeen
)

// has tells how name is exported: with series, by its HELP/TYPE header only, or not at all. A
// histogram's or summary's _bucket/_sum/_count series count as its family's.
func (e *exposition) has(name string) presence {
	if e.series[name] {
		return seriesSeen
	}
	if _, ok := e.families[name]; ok {
		return headerOnly
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if typ := e.families[base]; typ == "histogram" || typ == "summary" {
				return headerOnly
			}
		}
	}
	return notExported
}

func (e *exposition) hasSeries(name string) bool { return e.series[name] }

// definedIn names the non-test Go files of the service that mention the metric (so a missing
// metric reads as "registered lazily" or "never defined").
func definedIn(t *testing.T, root, name string) string {
	t.Helper()
	var files []string
	for _, dir := range []string{"pkg", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if strings.Contains(string(src), `"`+name+`"`) {
				rel, _ := filepath.Rel(root, path)
				files = append(files, rel)
			}
			return nil
		})
		require.NoError(t, err)
	}
	if len(files) == 0 {
		return " (no Go source defines it)"
	}
	return " (defined in " + strings.Join(files, ", ") + ": registered lazily, or a vector without children)"
}

// --- rule and dashboard expressions ---------------------------------------------------------

// alertExprs returns the expr of every rule of a Prometheus rules file, by alert (or record)
// name. The file is read line by line: expr is either inline or a block scalar (| or >) whose
// lines are indented deeper than the key.
func alertExprs(t *testing.T, path string) map[string]string {
	t.Helper()
	src, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(string(src), "\n")
	out := map[string]string{}
	rule := ""
	indent := func(s string) int { return len(s) - len(strings.TrimLeft(s, " ")) }
	for i := 0; i < len(lines); i++ {
		trimmed := strings.TrimSpace(lines[i])
		if strings.HasPrefix(trimmed, "#") {
			continue
		}
		for _, key := range []string{"- alert:", "- record:"} {
			if v, ok := strings.CutPrefix(trimmed, key); ok {
				rule = "alert " + strings.TrimSpace(v)
			}
		}
		v, ok := strings.CutPrefix(trimmed, "expr:")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if strings.HasPrefix(v, "|") || strings.HasPrefix(v, ">") {
			var block []string
			key := indent(lines[i])
			for ; i+1 < len(lines) && (strings.TrimSpace(lines[i+1]) == "" || indent(lines[i+1]) > key); i++ {
				block = append(block, strings.TrimSpace(lines[i+1]))
			}
			v = strings.Join(block, "\n")
		} else {
			v = strings.Trim(v, `"'`)
		}
		require.NotEmpty(t, rule, "%s:%d: expr outside a rule", path, i+1)
		require.NotContains(t, out, rule, "%s: rule %s twice", path, rule)
		out[rule] = v
	}
	return out
}

// dashboardExprs returns every "expr" of a Grafana dashboard, by panel title.
func dashboardExprs(t *testing.T, path string) map[string]string {
	t.Helper()
	src, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc any
	require.NoError(t, json.Unmarshal(src, &doc))
	out := map[string]string{}
	var walk func(v any, title string)
	walk = func(v any, title string) {
		switch x := v.(type) {
		case map[string]any:
			if s, ok := x["title"].(string); ok {
				title = s
			}
			if e, ok := x["expr"].(string); ok {
				id := fmt.Sprintf("panel %q", title)
				for n := 2; out[id] != ""; n++ {
					id = fmt.Sprintf("panel %q #%d", title, n)
				}
				out[id] = e
			}
			for _, c := range x {
				walk(c, title)
			}
		case []any:
			for _, c := range x {
				walk(c, title)
			}
		}
	}
	walk(doc, "")
	require.NotEmpty(t, out, "%s has no expressions", path)
	return out
}

var (
	promString   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	promBraces   = regexp.MustCompile(`\{[^{}]*\}`)
	promRange    = regexp.MustCompile(`\[[^\]]*\]`)
	promGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promIdent    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promKeywords = map[string]bool{
		"and": true, "or": true, "unless": true, "by": true, "without": true, "on": true, "ignoring": true,
		"group_left": true, "group_right": true, "bool": true, "offset": true, "inf": true, "nan": true,
	}
)

// metricNames returns the metric names a PromQL expression selects: identifiers outside
// strings, label matchers, ranges and grouping clauses that are neither keywords nor function
// calls.
func metricNames(expr string) []string {
	s := promString.ReplaceAllString(expr, `""`)
	s = promBraces.ReplaceAllString(s, " ")
	s = promRange.ReplaceAllString(s, " ")
	s = promGrouping.ReplaceAllString(s, " ")
	seen := map[string]bool{}
	var out []string
	for _, loc := range promIdent.FindAllStringIndex(s, -1) {
		name := s[loc[0]:loc[1]]
		if loc[0] > 0 && (s[loc[0]-1] >= '0' && s[loc[0]-1] <= '9' || s[loc[0]-1] == '.') {
			continue // a number's suffix (1e3, 5m)
		}
		if promKeywords[strings.ToLower(name)] || strings.HasPrefix(strings.TrimLeft(s[loc[1]:], " "), "(") || seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, name)
	}
	return out
}

type matcher struct{ label, op, value string }

type selector struct {
	name     string
	matchers []matcher
}

var (
	promSelector = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^{}]*)\}`)
	promMatcher  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"`)
)

// selectors returns the vector selectors with label matchers of an expression.
func selectors(expr string) []selector {
	var out []selector
	for _, m := range promSelector.FindAllStringSubmatch(expr, -1) {
		sel := selector{name: m[1]}
		for _, mm := range promMatcher.FindAllStringSubmatch(m[2], -1) {
			sel.matchers = append(sel.matchers, matcher{mm[1], mm[2], mm[3]})
		}
		out = append(out, sel)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
