package mcp_test

import (
	"bytes"
	"context"
	"fmt"
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
	found, err := testpeers.ConformanceProblems(results, testpeers.ConformanceClient{Name: "mcp-conformance-client", GivesUp: clientGivesUp})
	if err != nil {
		t.Error(err)
	}
	problems = append(problems, found...)
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
