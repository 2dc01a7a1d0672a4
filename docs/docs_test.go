package docs

import (
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
	// CLM-n, gap markers G-NAME and the rules Dn.
	ruleID = regexp.MustCompile(`\b(?:(?:PRE|INV|CLM)-[0-9]+[a-z]?|G-[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*|D[0-9]+)\b`)
	// definition is how spec.md defines an id: a heading "#### INV-7 — …" or the first cell of
	// a table row "| CLM-4 |".
	definition = regexp.MustCompile(`(?m)^(?:#{2,4} |\| )([A-Z][A-Z0-9-]*[a-z]?)(?: |$)`)
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

// sources returns every .go and .md file of the repository outside testdata, spec.md included
// (it cites its own ids and sections too).
func sources(t *testing.T) []source {
	t.Helper()
	var out []source
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "testdata", "node_modules", "vendor":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, ".md") {
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
	row := regexp.MustCompile("(?m)^\\| (INV-[0-9]+[a-z]?) \\| [^|]+ \\| `pkg/[a-z/]+`")
	owned := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(string(arch), -1) {
		owned[m[1]] = true
	}
	for _, d := range defined {
		require.True(t, owned[d[1]], "docs/architecture.md names no owning package for %s", d[1])
		delete(owned, d[1])
	}
	require.Empty(t, owned, "docs/architecture.md lists invariants that docs/spec.md does not define")
}
