package search

import (
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tackle-agent/tackle/daemon/tool"
)

// The Goroot benchmarks time a tool over Go's source tree against its
// oracle (rg or fdfind as a process, same options, output discarded) in
// the same benchmark and report ours/theirs as "ratio". They first check
// once that both find the same results.

func gorootSrc(b *testing.B) string {
	dir := filepath.Join(runtime.GOROOT(), "src")
	if _, err := exec.LookPath("rg"); err != nil {
		b.Skip("rg is not installed")
	}
	return dir
}

// benchPair runs ours and theirs b.N times each, interleaved, and reports
// their time ratio, and their CPU times (user and system; ours is the
// whole test process's) and that ratio, which a busy machine disturbs less.
func benchPair(b *testing.B, ours func() string, theirs *exec.Cmd, norm func(ours, theirs string) ([]string, []string)) {
	b.Helper()
	o := ours()
	c := *theirs
	out, err := c.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			b.Fatalf("%s: %v", theirs.Args, err)
		}
	}
	g, w := norm(o, string(out))
	if len(w) == 0 {
		b.Fatalf("the oracle found nothing")
	}
	if diff := cmp.Diff(w, g); diff != "" {
		b.Fatalf("results differ from %s (-theirs +ours):\n%s", theirs.Args[0], diff)
	}
	var tOurs, tTheirs, cpuOurs, cpuTheirs time.Duration
	b.ResetTimer()
	for range b.N {
		start, cpu := time.Now(), selfCPU()
		ours()
		tOurs += time.Since(start)
		cpuOurs += selfCPU() - cpu
		c := *theirs
		c.Stdout = io.Discard
		start = time.Now()
		if err := c.Run(); err != nil {
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
				b.Fatal(err)
			}
		}
		tTheirs += time.Since(start)
		cpuTheirs += c.ProcessState.UserTime() + c.ProcessState.SystemTime()
	}
	b.StopTimer()
	b.ReportMetric(float64(tOurs.Microseconds())/float64(b.N)/1000, "ours-ms")
	b.ReportMetric(float64(tTheirs.Microseconds())/float64(b.N)/1000, "theirs-ms")
	b.ReportMetric(float64(tOurs)/float64(tTheirs), "ratio")
	b.ReportMetric(float64(cpuOurs.Microseconds())/float64(b.N)/1000, "ours-cpu-ms")
	b.ReportMetric(float64(cpuTheirs.Microseconds())/float64(b.N)/1000, "theirs-cpu-ms")
	b.ReportMetric(float64(cpuOurs)/float64(cpuTheirs), "cpu-ratio")
}

// selfCPU returns the CPU time (user and system) this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func rgCmd(b *testing.B, dir string, args ...string) *exec.Cmd {
	full := []string{"--no-config", "--hidden", "--no-follow", "--max-columns", "500", "--color", "never", "--no-heading"}
	for _, g := range vcsExcludes {
		full = append(full, "-g", g)
	}
	cmd := exec.Command("rg", append(full, args...)...)
	cmd.Dir = dir
	cmd.Env = oracleEnv(b)
	return cmd
}

// sortedRel normalises both outputs to sorted relative lines.
func sortedRel(dir string) func(string, string) ([]string, []string) {
	return func(ours, theirs string) ([]string, []string) {
		g := relLines(ours, dir)
		w := lines(theirs)
		for i := range w {
			w[i] = longLineMarker.ReplaceAllString(w[i], "[Omitted long matching line]")
		}
		sort.Strings(g)
		sort.Strings(w)
		return g, w
	}
}

func benchGrep(b *testing.B, input map[string]any, rgArgs ...string) {
	dir := gorootSrc(b)
	grep, _ := tools()
	input["head_limit"] = 0
	ours := func() string {
		out, isErr := call(b, grep, dir, input)
		if isErr {
			b.Fatal(out)
		}
		return out
	}
	benchPair(b, ours, rgCmd(b, dir, rgArgs...), sortedRel(dir))
}

func BenchmarkGrepGorootFilesLiteral(b *testing.B) {
	benchGrep(b, map[string]any{"pattern": `errors\.New\(`}, "-l", `errors\.New\(`)
}

func BenchmarkGrepGorootContentLiteral(b *testing.B) {
	benchGrep(b, map[string]any{"pattern": `errors\.New\(`, "output_mode": "content"}, "-n", "-H", `errors\.New\(`)
}

// BenchmarkGrepGorootRegexNoLiteral uses a pattern without any literal,
// so no prefilter helps: the regexp engine reads every line.
func BenchmarkGrepGorootRegexNoLiteral(b *testing.B) {
	benchGrep(b, map[string]any{"pattern": `[A-Z]{4}[0-9]{2}`}, "-l", `[A-Z]{4}[0-9]{2}`)
}

// BenchmarkGrepGorootRegexNoLiteralFold is the same pattern with -i,
// where [A-Z] also matches 'ſ' and the KELVIN SIGN: the prefilter's run
// holds on ASCII lines only.
func BenchmarkGrepGorootRegexNoLiteralFold(b *testing.B) {
	benchGrep(b, map[string]any{"pattern": `[A-Z]{4}[0-9]{2}`, "-i": true}, "-l", "-i", `[A-Z]{4}[0-9]{2}`)
}

// BenchmarkGrepGorootRegexNoLiteralCount counts the matching lines, so
// every line is decided.
func BenchmarkGrepGorootRegexNoLiteralCount(b *testing.B) {
	benchGrep(b, map[string]any{"pattern": `[A-Z]{4}[0-9]{2}`, "output_mode": "count"}, "-c", "-H", `[A-Z]{4}[0-9]{2}`)
}

// BenchmarkGrepGorootRegexShortLiterals uses a pattern whose only
// literals are single common bytes.
func BenchmarkGrepGorootRegexShortLiterals(b *testing.B) {
	benchGrep(b, map[string]any{"pattern": `[a-z]+_[a-z]+\(`}, "-l", `[a-z]+_[a-z]+\(`)
}

func BenchmarkGlobGoroot(b *testing.B) {
	dir := filepath.Join(runtime.GOROOT(), "src")
	if _, err := exec.LookPath("fdfind"); err != nil {
		b.Skip("fdfind is not installed")
	}
	_, glob := tools()
	pattern := "**/*_test.go"
	ours := func() string {
		// Glob caps its output; list everything through the plan instead.
		out, isErr := call(b, glob, dir, map[string]any{"pattern": pattern})
		if isErr {
			b.Fatal(out)
		}
		return out
	}
	args := []string{"--hidden", "--no-follow", "--type", "f", "--color", "never", "--full-path", "--glob", dir + "/" + pattern}
	for _, g := range vcsExcludes {
		args = append(args, "--exclude", strings.TrimPrefix(g, "!"))
	}
	cmd := exec.Command("fdfind", append(args, dir)...)
	cmd.Env = oracleEnv(b)
	benchPair(b, ours, cmd, func(o, t string) ([]string, []string) {
		// Glob shows the newest 100; check the total and that they are fd's.
		w := lines(t)
		g := lines(o)
		var shown []string
		more := 0
		for _, l := range g {
			if strings.HasPrefix(l, "(results truncated: ") {
				_, _ = fmtSscanf(l, &more)
				continue
			}
			shown = append(shown, l)
		}
		if more+len(shown) != len(w) {
			b.Errorf("Glob reports %d files in all, fdfind %d", more+len(shown), len(w))
		}
		set := map[string]bool{}
		for _, l := range w {
			set[l] = true
		}
		var inW []string
		for _, l := range shown {
			if set[l] {
				inW = append(inW, l)
			}
		}
		return shown, inW
	})
}

func fmtSscanf(l string, more *int) (int, error) {
	return fmt.Sscanf(l, "(results truncated: %d more", more)
}

// BenchmarkGuard times Grep and Glob over Go's source tree without a
// ReadGuard and with one that denies nothing, interleaved, and reports
// both and their ratio: what a Read deny rule that applies to the session
// but not to the tree costs a search (the fake's Denied is a prefix check;
// the pipeline's rule matching adds its own).
func BenchmarkGuard(b *testing.B) {
	dir := filepath.Join(runtime.GOROOT(), "src")
	grep, glob := tools()
	for _, tc := range []struct {
		name  string
		tl    tool.Tool
		input map[string]any
	}{
		{"grep-files", grep, map[string]any{"pattern": `errors\.New\(`, "head_limit": 0}},
		{"grep-content", grep, map[string]any{"pattern": `errors\.New\(`, "output_mode": "content", "head_limit": 0}},
		{"glob-tests", glob, map[string]any{"pattern": "**/*_test.go"}},
		{"glob-all", glob, map[string]any{"pattern": "**/*"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			run := func(rg tool.ReadGuard) time.Duration {
				start := time.Now()
				if out, isErr := callGuarded(b, tc.tl, dir, tc.input, rg); isErr {
					b.Fatal(out)
				}
				return time.Since(start)
			}
			var tNone, tGuard time.Duration
			for b.Loop() {
				tNone += run(nil)
				tGuard += run(denyNothing())
			}
			b.ReportMetric(float64(tNone.Microseconds())/float64(b.N)/1000, "none-ms")
			b.ReportMetric(float64(tGuard.Microseconds())/float64(b.N)/1000, "guard-ms")
			b.ReportMetric(float64(tGuard)/float64(tNone), "ratio")
		})
	}
}
