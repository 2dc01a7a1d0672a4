package docs

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// root is the repository root: the test runs in docs/.
const root = ".."

var (
	// ruleID matches the ids of docs/spec.md §16: PRE-n, INV-n (INV-7b for a replacement),
	// CLM-n, gap markers G-NAME and the rules Dn (D3b).
	ruleID = regexp.MustCompile(`\b(?:(?:PRE|INV|CLM)-[0-9]+[a-z]?|G-[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*|D[0-9]+[a-z]?)\b`)
	// definition is how spec.md defines an id: a heading "#### INV-7 — …" or the first cell of
	// a table row "| CLM-4 |".
	definition = regexp.MustCompile(`(?m)^(?:#{2,4} |\| )([A-Z][A-Z0-9-]*[a-z]?)(?: |$)`)
	// invalidation is spec.md's note on a rule replaced by a new id, "[invalidated by INV-7b: why
	// it changed]", in the rule's table row or on the line below its heading. The reason holds no
	// square bracket.
	invalidation = regexp.MustCompile(`\[invalidated by ([^:\]\s]+): [^\]]*\]`)
	// sectionRef is a citation "docs/spec.md §4", "docs/sis.md §e.2", "§5–§7".
	sectionRef = regexp.MustCompile(`docs/(spec|sis)\.md ((?:§[0-9a-z]+(?:\.[0-9]+)?[–-]?)+)`)
	section    = regexp.MustCompile(`§([0-9a-z]+(?:\.[0-9]+)?)`)
	// heading is a numbered or lettered section heading: "## 4. Ingest", "### 3.1 …", "## e. …".
	heading = regexp.MustCompile(`(?m)^#{2,3} ([0-9a-z]+(?:\.[0-9]+)?)\.? `)
	// outside matches references to documents that live outside the repository: the sibling
	// folder of the original specification, its seeds, and the upper-case file names it used.
	// (The pattern is split so that the repository's own grep for the sibling folder finds
	// nothing here.)
	outside = regexp.MustCompile(`\.\./` + `shared|shared` + `/(?:docs|seeds)|\bseeds?/|\bSPEC(?:\.md)?\b|\bSIS\.md\b|\bSTYLE\.md\b`)
)

type source struct {
	path string // relative to the repository root, slash-separated
	text string
}

// sources returns every Go file, document, manifest, dashboard and SQL file of the repository
// outside testdata, spec.md included (it cites its own ids and sections too). The applied
// migrations are left out: each records what it did when it was written and is never edited.
func sources(t *testing.T) []source {
	t.Helper()
	var out []source
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "testdata", "node_modules", "vendor", "migrations":
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(p) {
		case ".go", ".md", ".yaml", ".yml", ".json", ".sql":
		default:
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		out = append(out, source{path: filepath.ToSlash(rel), text: string(b)})
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, out)
	return out
}

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	return string(b)
}

// TestCitedIDsAreDefined: every rule id cited anywhere in the repository's Go code and
// documents is defined in docs/spec.md, so a comment "(INV-7)" always leads somewhere.
func TestCitedIDsAreDefined(t *testing.T) {
	defined := map[string]bool{}
	for _, m := range definition.FindAllStringSubmatch(read(t, "spec.md"), -1) {
		defined[m[1]] = true
	}
	for _, id := range []string{"INV-7", "INV-22", "CLM-4", "PRE-7", "D3", "G-MAFL"} {
		require.True(t, defined[id], "spec.md must define %s (the definition pattern is broken?)", id)
	}

	missing := map[string][]string{}
	cited := 0
	for _, s := range sources(t) {
		if s.path == "docs/docs_test.go" {
			continue // this file spells examples
		}
		for _, id := range ruleID.FindAllString(s.text, -1) {
			cited++
			if !defined[id] {
				missing[id] = append(missing[id], s.path)
			}
		}
	}
	require.Greater(t, cited, 50, "the scan found almost no citations: is it reading the repository?")
	var lines []string
	for id, paths := range missing {
		lines = append(lines, id+" cited in "+strings.Join(uniq(paths), ", "))
	}
	sort.Strings(lines)
	require.Empty(t, lines, "ids cited but not defined in docs/spec.md §16")
}

// rules is what docs/spec.md says of its ids: where each is defined, which were invalidated and
// by which id, and where its invalidation notes lie.
type rules struct {
	defined    map[string]int    // id → offset of its definition
	replacedBy map[string]string // invalidated id → the id its note names
	notes      [][]int           // offsets [start, end) of the invalidation notes
}

// readRules parses spec.md. A note belongs to the definition it follows, on the definition's
// line (a table row) or the next one (below a heading); it must name a defined id.
func readRules(t *testing.T, spec string) rules {
	t.Helper()
	r := rules{defined: map[string]int{}, replacedBy: map[string]string{}}
	defs := definition.FindAllStringSubmatchIndex(spec, -1)
	for _, m := range defs {
		r.defined[spec[m[2]:m[3]]] = m[2]
	}
	for _, n := range invalidation.FindAllStringSubmatchIndex(spec, -1) {
		r.notes = append(r.notes, n[:2])
		owner := -1
		for i, m := range defs {
			if m[0] < n[0] {
				owner = i
			}
		}
		line := strings.Count(spec[:n[0]], "\n") + 1
		require.GreaterOrEqual(t, owner, 0, "spec.md:%d: an invalidation note before any definition", line)
		old, by := spec[defs[owner][2]:defs[owner][3]], spec[n[2]:n[3]]
		require.LessOrEqual(t, strings.Count(spec[defs[owner][0]:n[0]], "\n"), 1,
			"spec.md:%d: an invalidation note must be in its rule's row or on the line below its heading", line)
		_, ok := r.defined[by]
		require.True(t, ok, "spec.md:%d: %s is invalidated by %s, which is not defined", line, old, by)
		require.Greater(t, r.defined[by], r.defined[old], "spec.md:%d: %s must be appended after %s", line, by, old)
		r.replacedBy[old] = by
	}
	return r
}

// current follows the replacements of id to the rule in force.
func (r rules) current(id string) string {
	for range len(r.replacedBy) + 1 {
		by, ok := r.replacedBy[id]
		if !ok {
			return id
		}
		id = by
	}
	return id + " (the replacements form a cycle)"
}

// inNote reports whether the offset lies inside an invalidation note.
func (r rules) inNote(off int) bool {
	for _, n := range r.notes {
		if off >= n[0] && off < n[1] {
			return true
		}
	}
	return false
}

// invalidatedRow reports whether offset off of text lies on a table row that is itself
// invalidated (a claim's row keeps its old text after its "[invalidated by …]" note).
func invalidatedRow(text string, off int) bool {
	start := strings.LastIndexByte(text[:off], '\n') + 1
	end := strings.IndexByte(text[off:], '\n')
	if end < 0 {
		end = len(text) - off
	}
	line := text[start : off+end]
	return strings.HasPrefix(line, "|") && strings.Contains(line, "[invalidated by ")
}

// TestInvalidatedIDsAreNotCited: a rule whose meaning changed was appended under a new id and the
// old one marked "[invalidated by …: why]" (docs/spec.md, "How to cite"); a citation of the old id
// anywhere but in spec.md's invalidation notes would silently keep the old meaning, so it fails,
// naming the file, the line and the id in force.
func TestInvalidatedIDsAreNotCited(t *testing.T) {
	spec := read(t, "spec.md")
	r := readRules(t, spec)
	for old, by := range map[string]string{"INV-8": "INV-8b", "INV-8b": "INV-8c", "INV-9": "INV-9b", "D3": "D3b"} {
		require.Equal(t, by, r.replacedBy[old], "spec.md must invalidate %s by %s (the note pattern is broken?)", old, by)
	}

	var bad []string
	for _, s := range sources(t) {
		if s.path == "docs/docs_test.go" {
			continue // this file spells examples
		}
		if strings.HasPrefix(s.path, "docs/runs/") {
			continue // a dated run records the rules as they stood then
		}
		for _, m := range ruleID.FindAllStringIndex(s.text, -1) {
			id := s.text[m[0]:m[1]]
			if _, ok := r.replacedBy[id]; !ok {
				continue
			}
			if s.path == "docs/spec.md" && (r.defined[id] == m[0] || r.inNote(m[0]) || invalidatedRow(s.text, m[0])) {
				continue // the old rule's own definition, a note, or an invalidated claim's row
			}
			line := strings.Count(s.text[:m[0]], "\n") + 1
			bad = append(bad, fmt.Sprintf("%s:%d: %s is invalidated: cite %s", s.path, line, id, r.current(id)))
		}
	}
	require.Empty(t, strings.Join(bad, "\n"), "citations of invalidated ids (docs/spec.md §16)")
}

// TestCitedSectionsExist: every "docs/spec.md §n" and "docs/sis.md §x.y" names a heading of
// that document.
func TestCitedSectionsExist(t *testing.T) {
	headings := map[string]map[string]bool{"spec": {}, "sis": {}}
	for doc, set := range headings {
		for _, m := range heading.FindAllStringSubmatch(read(t, doc+".md"), -1) {
			set[m[1]] = true
		}
	}
	require.True(t, headings["spec"]["16.2"] && headings["spec"]["3.1"] && headings["spec"]["4"])
	require.True(t, headings["sis"]["e.2"] && headings["sis"]["h"] && headings["sis"]["d"])

	var bad []string
	refs := 0
	for _, s := range sources(t) {
		if s.path == "docs/docs_test.go" {
			continue // this file spells examples
		}
		for _, m := range sectionRef.FindAllStringSubmatch(s.text, -1) {
			for _, sec := range section.FindAllStringSubmatch(m[2], -1) {
				refs++
				if !headings[m[1]][sec[1]] {
					bad = append(bad, s.path+": docs/"+m[1]+".md §"+sec[1])
				}
			}
		}
	}
	require.Greater(t, refs, 50)
	sort.Strings(bad)
	require.Empty(t, uniq(bad), "cited sections that do not exist")
}

// TestNothingPointsOutside: no Go file or document refers to documents outside the repository.
func TestNothingPointsOutside(t *testing.T) {
	var bad []string
	for _, s := range sources(t) {
		if s.path == "docs/docs_test.go" {
			continue // this file spells the patterns
		}
		hits := outside.FindAllString(s.text, -1)
		if len(hits) > 0 {
			bad = append(bad, s.path+": "+strings.Join(uniq(hits), ", "))
		}
	}
	require.Empty(t, bad, "references to documents outside the repository (cite docs/spec.md, docs/sis.md or docs/decisions.md)")
}

func uniq(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// TestArchitectureNamesEveryInvariantOwner: docs/architecture.md has a row, with an owning
// package, for every invariant that docs/spec.md §16.2 defines, and no row for an unknown one.
func TestArchitectureNamesEveryInvariantOwner(t *testing.T) {
	spec, err := os.ReadFile(filepath.Join(root, "docs", "spec.md"))
	require.NoError(t, err)
	arch, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	require.NoError(t, err)
	defined := regexp.MustCompile(`(?m)^#### (INV-[0-9]+[a-z]?) `).FindAllStringSubmatch(string(spec), -1)
	require.NotEmpty(t, defined)
	invalidated := readRules(t, string(spec)).replacedBy
	row := regexp.MustCompile("(?m)^\\| (INV-[0-9]+[a-z]?) \\| [^|]+ \\| `pkg/[a-z/]+`")
	owned := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(string(arch), -1) {
		owned[m[1]] = true
	}
	for _, d := range defined {
		if by, ok := invalidated[d[1]]; ok {
			require.False(t, owned[d[1]], "docs/architecture.md names an owner for %s, which %s replaced", d[1], by)
			continue
		}
		require.True(t, owned[d[1]], "docs/architecture.md names no owning package for %s", d[1])
		delete(owned, d[1])
	}
	require.Empty(t, owned, "docs/architecture.md lists invariants that docs/spec.md does not define")
}
