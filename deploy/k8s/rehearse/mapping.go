package rehearse

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Mapping is the one change the rehearsal makes to the manifests' values to run on one
// machine: each key (a cluster host:port, a listen address, a mount path, the image's binary
// directory) is replaced by its local stand-in wherever it occurs in a value. Nothing else of a
// container's command or environment is changed.
type Mapping map[string]string

// With returns a copy of m with more replacements (a process's own listen addresses).
func (m Mapping) With(more map[string]string) Mapping {
	out := maps.Clone(m)
	maps.Copy(out, more)
	return out
}

// Apply replaces, in every NAME=value line's value, each key of m by its stand-in, in one pass
// (a stand-in is never replaced again; where keys overlap, the longest wins).
func (m Mapping) Apply(lines []string) []string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int { return len(b) - len(a) })
	var pairs []string
	for _, k := range keys {
		pairs = append(pairs, k, m[k])
	}
	rep := strings.NewReplacer(pairs...)
	out := make([]string, len(lines))
	for i, l := range lines {
		name, value, _ := strings.Cut(l, "=")
		out[i] = name + "=" + rep.Replace(value)
	}
	return out
}

// Path maps one path (a command's binary, a mounted file).
func (m Mapping) Path(p string) string {
	return strings.TrimPrefix(m.Apply([]string{"=" + p})[0], "=")
}

// String lists the replacements, one per line, for the rehearsal's log.
func (m Mapping) String() string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, "  %s → %s\n", k, m[k])
	}
	return b.String()
}
