package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Machine describes where a run happened: CPUs, model, load average at the start, Go version.
func Machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				model = strings.TrimSpace(l[strings.IndexByte(l, ':')+1:])
				break
			}
		}
	}
	load := "?"
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		load = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	return fmt.Sprintf("%d CPUs (%s), load average at start %s, %s %s/%s", runtime.NumCPU(), model, load, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// Section is the record of a run (docs/runs/reliability, WriteRun): one table row per scenario, with
// the configuration its binaries ran (Result.Configuration).
func Section(results []Result, started time.Time, took time.Duration, machine, note string) string {
	var b strings.Builder
	passed := 0
	for _, r := range results {
		if r.Passed {
			passed++
		}
	}
	fmt.Fprintf(&b, "## Run of %s\n\n", started.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "Machine: %s. Took %s. %d of %d scenarios passed.", machine, took.Round(time.Second), passed, len(results))
	if note != "" {
		fmt.Fprintf(&b, " %s", note)
	}
	b.WriteString("\n\n| Scenario | Configuration | What was done | Expected | Observed | Recovery | Duplicates | Lost | Result |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		result := "PASS"
		obs := r.Observed
		if !r.Passed {
			result = "**FAIL**"
			if r.Issue != "" {
				result += " (issue " + r.Issue + ")"
			}
			var ps []string
			for _, p := range r.Problems {
				if !strings.HasPrefix(p, "logs in ") {
					ps = append(ps, p)
				}
			}
			obs = strings.TrimPrefix(obs+"; broke: "+strings.Join(ps, "; "), "; ")
		}
		did := r.Did
		if r.Messages > 0 {
			did += fmt.Sprintf(" (%d messages)", r.Messages)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %d | %d | %s |\n", r.Name, cell(r.Configuration), cell(did), cell(r.Expected), cell(short(obs, 600)),
			r.Recovery.Round(100*time.Millisecond), r.Duplicates, r.Lost, result)
	}
	return b.String()
}

func cell(s string) string {
	return strings.NewReplacer("|", "\\|", "\n", " ").Replace(s)
}

func short(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + " …"
}

// Failures names each failed scenario and what broke, for the exit message.
func Failures(results []Result) []string {
	var out []string
	for _, r := range results {
		if !r.Passed {
			out = append(out, fmt.Sprintf("%s: %s", r.Name, strings.Join(r.Problems, "; ")))
		}
	}
	return out
}

// WriteRun writes a run's section (Section) as a file of its own in dir, named by the run's start
// (YYYY-MM-DD-HHMM.md, UTC), its heading the section's: it returns the file's path.
func WriteRun(dir string, started time.Time, section string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	title, body, _ := strings.Cut(section, "\n")
	path := filepath.Join(dir, started.UTC().Format("2006-01-02-1504")+".md")
	text := "# Fault suite: " + strings.TrimPrefix(title, "## ") + "\n" + strings.ReplaceAll(body, "\n### ", "\n## ")
	return path, os.WriteFile(path, []byte(text), 0o644)
}
