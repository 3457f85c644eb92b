package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/internal/fakemodel"
)

// oneToolTurn answers a whole one-tool turn for any agent: a request that
// offers a Read tool and carries no tool result gets a Read of file; one
// with the result gets the answer; anything else (an agent's side
// requests: titles, summaries) gets a short text.
func oneToolTurn(file string) fakemodel.Script {
	return func(r *fakemodel.Request) fakemodel.Turn {
		switch {
		case len(r.ToolResults()) > 0:
			return fakemodel.Say("The file says hello.")
		case hasTool(r, "Read"):
			return fakemodel.Call("Read", map[string]any{"file_path": file})
		}
		return fakemodel.Say("ok")
	}
}

func hasTool(r *fakemodel.Request, name string) bool {
	for _, n := range r.ToolNames() {
		if n == name {
			return true
		}
	}
	return false
}

// peerBinary is an agent installed for the benchmarks only (scripts/bench.sh
// installs them into testpeers/bench); the benchmark is skipped without it.
func peerBinary(b *testing.B, rel string) string {
	p, err := filepath.Abs(filepath.Join("..", "testpeers", "bench", "node_modules", rel))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		b.Skipf("%s is not installed (make bench installs it): %v", rel, err)
	}
	return p
}

// benchWholeTurn times a whole command that runs one prompt → Read →
// answer turn against the fake model server, and reports its p50.
func benchWholeTurn(b *testing.B, newCmd func(fm *fakemodel.Server, dir, file string) *exec.Cmd, check func(out string) bool) {
	dir := b.TempDir()
	file := filepath.Join(dir, "f.txt")
	if err := os.WriteFile(file, []byte("hello\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	fm := fakemodel.Start(b, &fakemodel.Options{APIKey: "sk-bench", Script: oneToolTurn(file), MergeConsecutiveRoles: true, Unchecked: true})
	run := func() time.Duration {
		cmd := newCmd(fm, dir, file)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		if err := cmd.Run(); err != nil || !check(out.String()) {
			b.Fatalf("%v: %v\n%s", cmd.Args, err, out.String())
		}
		return time.Since(start)
	}
	run() // warm: the daemon starts, caches fill
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		durs = append(durs, run())
	}
	b.StopTimer()
	reportP50(b, durs)
}

// BenchmarkWholeTurnTackle: `tackle run` with a warm daemon.
func BenchmarkWholeTurnTackle(b *testing.B) {
	e := newBenchEnv(b)
	benchWholeTurn(b, func(fm *fakemodel.Server, dir, _ string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(binDir, "tackle"), "run", "what does f.txt say?")
		cmd.Dir = dir
		cmd.Env = append(append([]string(nil), e...), "ANTHROPIC_BASE_URL="+fm.URL(), "ANTHROPIC_API_KEY=sk-bench")
		return cmd
	}, func(out string) bool { return strings.Contains(out, "The file says hello.") })
}

// BenchmarkWholeTurnClaudeCode: Claude Code's `claude -p`, its native
// binary from npm, pointed at the same fake model.
func BenchmarkWholeTurnClaudeCode(b *testing.B) {
	bin := peerBinary(b, "@anthropic-ai/claude-code-linux-x64/claude")
	home := b.TempDir()
	benchWholeTurn(b, func(fm *fakemodel.Server, dir, _ string) *exec.Cmd {
		cmd := exec.Command(bin, "-p", "what does f.txt say?", "--allowedTools", "Read")
		cmd.Dir = dir
		cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "ANTHROPIC_BASE_URL=" + fm.URL(), "ANTHROPIC_API_KEY=sk-bench",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "IS_SANDBOX=1"}
		return cmd
	}, func(out string) bool { return strings.Contains(out, "The file says hello.") })
}
