package k8s_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSecretsTable: the Secrets table of docs/deploy.md lists exactly the Secret keys the
// production manifests and msgxctl.sh read, so Secrets created from it let every pod and the
// migration Job start.
func TestSecretsTable(t *testing.T) {
	t.Parallel()
	read := manifestSecretKeys(t, render(t, "production"))
	read = append(read, scriptSecretKeys(t)...)
	slices.Sort(read)
	require.Equal(t, slices.Compact(read), docSecretKeys(t), "docs/deploy.md's Secrets table (Secret/key) against what the manifests read")
}

// manifestSecretKeys are the Secret/key pairs every container (init containers too) reads:
// env from secretKeyRef and the items of Secret volumes.
func manifestSecretKeys(t *testing.T, r *rendered) []string {
	t.Helper()
	var out []string
	for _, w := range r.workloads() {
		for _, c := range append(slices.Clone(w.pod.Spec.InitContainers), w.pod.Spec.Containers...) {
			for _, ef := range c.EnvFrom {
				require.Nil(t, ef.SecretRef, "%s %s: envFrom a Secret hides which keys it reads", w.kind, w.name)
			}
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					out = append(out, e.ValueFrom.SecretKeyRef.Name+"/"+e.ValueFrom.SecretKeyRef.Key)
				}
			}
		}
		for _, v := range w.pod.Spec.Volumes {
			if v.Secret == nil {
				continue
			}
			require.NotEmpty(t, v.Secret.Items, "%s %s: volume %s lists the Secret's keys", w.kind, w.name, v.Name)
			for _, it := range v.Secret.Items {
				out = append(out, v.Secret.SecretName+"/"+it.Key)
			}
		}
	}
	return out
}

var (
	scriptSecret = regexp.MustCompile(`want=(msgx-[a-z0-9-]+)`)
	scriptPGKey  = regexp.MustCompile(`"secretKeyRef": \{"name": os.environ\["SECRET"\], "key": "([a-z0-9-]+)"\}`)
	scriptKafka  = regexp.MustCompile(`\("MSGX_KAFKA_SASL_[A-Z]+", "([a-z0-9-]+)"\)`)
)

// scriptSecretKeys are the Secret keys msgxctl.sh reads: the PostgreSQL role's URL it picks
// for its pods, and the read-only Kafka principal's credentials of the kafka commands.
func scriptSecretKeys(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("msgxctl.sh")
	require.NoError(t, err)
	keys := scriptPGKey.FindAllStringSubmatch(string(b), -1)
	require.Len(t, keys, 1, "msgxctl.sh reads one key of its PostgreSQL Secret")
	var out []string
	for _, m := range scriptSecret.FindAllStringSubmatch(string(b), -1) {
		out = append(out, m[1]+"/"+keys[0][1])
	}
	require.NotEmpty(t, out, "msgxctl.sh names its Secrets as want=<name>")
	require.Contains(t, string(b), `"name": "msgx-kafka-reader"`)
	for _, m := range scriptKafka.FindAllStringSubmatch(string(b), -1) {
		out = append(out, "msgx-kafka-reader/"+m[1])
	}
	return out
}

// backticked are the `code` spans of a table cell.
var backticked = regexp.MustCompile("`([^`]+)`")

// docSecretKeys reads docs/deploy.md's Secrets table: the first column names Secrets, the second
// their keys, each in backticks; every Secret of a row has every key of the row.
func docSecretKeys(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "deploy.md"))
	require.NoError(t, err)
	var out []string
	inTable := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "| Secret | keys |") {
			inTable = true
			continue
		}
		if !inTable || strings.HasPrefix(line, "|---") {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(line, "|")
		require.GreaterOrEqual(t, len(cells), 4, "row %q", line)
		names, keys := backticked.FindAllStringSubmatch(cells[1], -1), backticked.FindAllStringSubmatch(cells[2], -1)
		require.NotEmpty(t, names, "row %q names no Secret", line)
		require.NotEmpty(t, keys, "row %q names no key", line)
		for _, n := range names {
			for _, k := range keys {
				out = append(out, n[1]+"/"+k[1])
			}
		}
	}
	require.True(t, inTable, "docs/deploy.md has a table headed | Secret | keys |")
	slices.Sort(out)
	return out
}
