package testpeers

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// ConformanceClient describes a client run by the MCP conformance suite
// (`npx @modelcontextprotocol/conformance client`), for reading its
// results.
type ConformanceClient struct {
	// Name is what the client prints when it has finished a scenario:
	// "<Name>: scenario <scenario> done".
	Name string
	// GivesUp are the scenarios whose server never lets the client
	// through: the client must not finish them.
	GivesUp []string
	// Skip are the scenarios known to fail, not judged here.
	Skip map[string]string
}

// runStamp is the time the suite appends to a scenario's results directory.
var runStamp = regexp.MustCompile(`-\d{4}-\d{2}-\d{2}T[\d-]+Z$`)

// ConformanceProblems reads every scenario's checks.json under the suite's
// results directory dir and describes each check that failed or warned
// and each scenario the client finished where it should have given up or
// did not finish, with the client's stderr of that scenario.
func ConformanceProblems(dir string, c ConformanceClient) ([]string, error) {
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
		if _, ok := c.Skip[scenario]; ok {
			return nil
		}
		stdout, _ := os.ReadFile(filepath.Join(filepath.Dir(path), "stdout.txt"))
		done := strings.Contains(string(stdout), c.Name+": scenario "+scenario+" done")
		bad := false
		switch giveUp := slices.Contains(c.GivesUp, scenario); {
		case giveUp && done:
			bad = true
			problems = append(problems, fmt.Sprintf("%s: the client finished where it should have given up", scenario))
		case !giveUp && !done:
			bad = true
			problems = append(problems, fmt.Sprintf("%s: the client did not finish the scenario", scenario))
		}
		for _, ch := range checks {
			if ch.Status == "FAILURE" || ch.Status == "WARNING" {
				bad = true
				problems = append(problems, fmt.Sprintf("%s: %s %s: %s", scenario, ch.Status, ch.ID, ch.Description))
			}
		}
		if bad {
			if stderr, err := os.ReadFile(filepath.Join(filepath.Dir(path), "stderr.txt")); err == nil && len(stderr) > 0 {
				problems = append(problems, fmt.Sprintf("%s: client stderr:\n%s", scenario, LastLines(string(stderr), 20)))
			}
		}
		return nil
	})
	if err != nil {
		return problems, fmt.Errorf("reading the suite's results: %w", err)
	}
	return problems, nil
}

// LastLines returns the last n lines of s.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
