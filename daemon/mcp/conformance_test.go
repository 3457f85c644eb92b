package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/internal/testpeers"
)

// coreScenarios are the client scenarios of the conformance suite's "core"
// suite (@modelcontextprotocol/conformance 0.1.16). A suite that runs fewer
// or others fails the test, so a new suite version is looked at, not trusted.
var coreScenarios = []string{
	"initialize",
	"tools_call",
	"elicitation-sep1034-client-defaults",
	"sse-retry",
	"auth/metadata-default",
	"auth/metadata-var1",
	"auth/metadata-var2",
	"auth/metadata-var3",
	"auth/basic-cimd",
	"auth/scope-from-www-authenticate",
	"auth/scope-from-scopes-supported",
	"auth/scope-omitted-when-undefined",
	"auth/scope-step-up",
	"auth/scope-retry-limit",
	"auth/token-endpoint-auth-basic",
	"auth/token-endpoint-auth-post",
	"auth/token-endpoint-auth-none",
	"auth/pre-registration",
}

// clientGivesUp are the scenarios whose server never lets the client
// through: the client must stop trying and fail. In every other scenario
// the client's calls must succeed (the suite does not check that).
var clientGivesUp = []string{"auth/scope-retry-limit"}

// TestConformance runs the MCP conformance suite's core client scenarios
// against cmd/mcp-conformance-client, a client built on this package: every
// scenario must pass every check, with no warnings, and the client's own
// calls must succeed where the scenario lets them.
func TestConformance(t *testing.T) {
	suite := testpeers.Bin(t, "conformance")
	nodeDir := testpeers.NodeBinDir(t)
	dir := t.TempDir()

	client := filepath.Join(dir, "mcp-conformance-client")
	build := exec.Command(goTool(t), "build", "-o", client, "github.com/tackle-agent/tackle/daemon/cmd/mcp-conformance-client")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the conformance client: %v\n%s", err, out)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	results := filepath.Join(dir, "results")
	cmd := exec.CommandContext(ctx, suite, "client", "--command", client, "--suite", "core", "-o", results)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+nodeDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	// The suite starts servers and client processes: kill them all.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	start := time.Now()
	runErr := cmd.Run()
	if cmd.Process != nil {
		// A client the suite gave up on may outlive it.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	t.Logf("conformance suite took %v", time.Since(start).Round(time.Millisecond))

	summary, problems := judgeSuite(out.String())
	problems = append(problems, failedChecks(t, results)...)
	if runErr != nil {
		problems = append(problems, fmt.Sprintf("the suite exited with %v", runErr))
	}
	if m := totalLineIn(summary); m != "" {
		t.Logf("conformance (core): %s", m)
	}
	if len(problems) > 0 {
		t.Errorf("MCP conformance suite (core) failed:\n  %s\n\n%s", strings.Join(problems, "\n  "), summary)
		if summary == "" {
			t.Logf("suite output:\n%s", out.String())
		}
	}
}

var (
	scenarioLine = regexp.MustCompile(`^[✓✗] (\S+): (\d+) passed, (\d+) failed`)
	totalLine    = regexp.MustCompile(`^Total: (\d+) passed, (\d+) failed, (\d+) warnings`)
	// runStamp is the time the suite appends to a scenario's results directory.
	runStamp = regexp.MustCompile(`-\d{4}-\d{2}-\d{2}T[\d-]+Z$`)
)

// totalLineIn returns the suite's "Total: ..." line, or "".
func totalLineIn(summary string) string {
	for line := range strings.Lines(summary) {
		if line = strings.TrimSpace(line); totalLine.MatchString(line) {
			return line
		}
	}
	return ""
}

// judgeSuite finds the suite summary in its output and lists what is wrong
// with it: a missing or unexpected scenario, a failed check, a scenario
// with no passed check (the suite marks a client that exited before any
// check as passed), warnings.
func judgeSuite(output string) (summary string, problems []string) {
	i := strings.Index(output, "=== SUITE SUMMARY ===")
	if i < 0 {
		return "", []string{"the suite printed no summary"}
	}
	summary = strings.TrimSpace(output[i:])
	seen := map[string]bool{}
	sawTotal := false
	for line := range strings.Lines(summary) {
		line = strings.TrimSpace(line)
		if m := scenarioLine.FindStringSubmatch(line); m != nil {
			name := m[1]
			seen[name] = true
			passed, _ := strconv.Atoi(m[2])
			failed, _ := strconv.Atoi(m[3])
			switch {
			case !slices.Contains(coreScenarios, name):
				problems = append(problems, fmt.Sprintf("%s: not a known core scenario (update coreScenarios after checking it)", name))
			case failed > 0:
				problems = append(problems, fmt.Sprintf("%s: %d checks failed", name, failed))
			case passed == 0:
				problems = append(problems, fmt.Sprintf("%s: no check passed", name))
			}
		}
		if m := totalLine.FindStringSubmatch(line); m != nil {
			sawTotal = true
			if m[3] != "0" {
				problems = append(problems, fmt.Sprintf("%s warnings", m[3]))
			}
		}
	}
	for _, name := range coreScenarios {
		if !seen[name] {
			problems = append(problems, fmt.Sprintf("%s: missing from the summary", name))
		}
	}
	if !sawTotal {
		problems = append(problems, "the summary has no Total line")
	}
	return summary, problems
}

// failedChecks reads every scenario's checks.json under dir and describes
// each check that failed or warned, with the client's stderr of that
// scenario.
func failedChecks(t *testing.T, dir string) []string {
	t.Helper()
	var problems []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "checks.json" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var checks []struct {
			ID          string `json:"id"`
			Status      string `json:"status"`
			Description string `json:"description"`
		}
		if err := json.Unmarshal(data, &checks); err != nil {
			return fmt.Errorf("parsing %s: %w", path, err)
		}
		scenario, _ := filepath.Rel(dir, filepath.Dir(path))
		scenario = runStamp.ReplaceAllString(scenario, "")
		stdout, _ := os.ReadFile(filepath.Join(filepath.Dir(path), "stdout.txt"))
		done := strings.Contains(string(stdout), "mcp-conformance-client: scenario "+scenario+" done")
		bad := false
		switch giveUp := slices.Contains(clientGivesUp, scenario); {
		case giveUp && done:
			bad = true
			problems = append(problems, fmt.Sprintf("%s: the client succeeded where it should have given up", scenario))
		case !giveUp && !done:
			bad = true
			problems = append(problems, fmt.Sprintf("%s: the client did not finish the scenario", scenario))
		}
		for _, c := range checks {
			if c.Status == "FAILURE" || c.Status == "WARNING" {
				bad = true
				problems = append(problems, fmt.Sprintf("%s: %s %s: %s", scenario, c.Status, c.ID, c.Description))
			}
		}
		if bad {
			if stderr, err := os.ReadFile(filepath.Join(filepath.Dir(path), "stderr.txt")); err == nil && len(stderr) > 0 {
				problems = append(problems, fmt.Sprintf("%s: client stderr:\n%s", scenario, lastLines(string(stderr), 20)))
			}
		}
		return nil
	})
	if err != nil {
		t.Errorf("reading the suite's results: %v", err)
	}
	return problems
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// goTool returns the go command running this test (go test puts its
// GOROOT/bin first in PATH).
func goTool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("finding the go command to build the conformance client: %v", err)
	}
	return p
}
