package cmd_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// maxFuncLines bounds a product function, from its func line to its closing brace: a longer one
// does several things, each of which deserves a name.
const maxFuncLines = 80

// goFiles lists the .go files under the repository's pkg and cmd directories.
func goFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, root := range []string{"../pkg", "."} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".go") {
				files = append(files, path)
			}
			return err
		})
		require.NoError(t, err)
	}
	require.NotEmpty(t, files)
	return files
}

// command reports whether path is code of a command under cmd/, not a test.
func command(path string) bool {
	return !strings.HasPrefix(path, "../") && !strings.HasSuffix(path, "_test.go")
}

// product reports whether path is code a deployed binary or msgxctl runs: not a test, not
// development-only (pkg/dev, the development commands).
func product(path string) bool {
	if strings.HasSuffix(path, "_test.go") || strings.Contains(path, "pkg/dev/") {
		return false
	}
	if strings.HasPrefix(path, "../pkg/") {
		return true
	}
	for _, bin := range []string{"ingest", "processor", "dispatcher", "jobs", "console", "msgxctl"} {
		if strings.HasPrefix(path, bin+"/") {
			return true
		}
	}
	return false
}

// TestNoProductFunctionIsLong: no function of the product code (pkg outside pkg/dev) and of
// any command (cmd/, the development commands too) is longer than maxFuncLines.
func TestNoProductFunctionIsLong(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	var long []string
	checked := 0
	for _, path := range goFiles(t) {
		if !product(path) && !command(path) {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		require.NoError(t, err)
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			checked++
			if n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; n > maxFuncLines {
				long = append(long, fset.Position(fn.Pos()).String()+" "+fn.Name.Name)
			}
		}
	}
	require.Greater(t, checked, 500, "the walk found the product code")
	require.Empty(t, long, "functions over %d lines", maxFuncLines)
}

// Code comments say what and why; the history of a change (its issue) lives in git and docs.
func TestNoCommentCitesAnIssue(t *testing.T) {
	t.Parallel()
	cite := regexp.MustCompile(`issue [0-9]+`)
	var found []string
	for _, path := range goFiles(t) {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		for i, line := range strings.Split(string(b), "\n") {
			if cite.MatchString(line) {
				found = append(found, fmt.Sprintf("%s:%d: %s", path, i+1, strings.TrimSpace(line)))
			}
		}
	}
	require.Empty(t, found)
}
