// Package tackle_test holds repository-wide checks. deps_test.go enforces the
// import rule of design.md: daemon packages import downward only, tool is
// stdlib-only, only daemon/server, the clients and test helpers import gen/,
// and the clients import nothing under daemon/ but daemon/socket.
package tackle_test

import (
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/tackle-agent/tackle"

// layers maps a daemon package (and its subpackages) to its layer. A package
// may import tackle packages of lower layers, and its own subpackages.
var layers = []struct {
	prefix string
	layer  int
}{
	{"daemon/tool", 0}, {"internal/testpeers", 0}, // test support, stdlib only
	{"internal/safefile", 0}, {"internal/gitconfig", 0}, {"internal/frontmatter", 0}, // stdlib only: the one reader of configuration files; git config entries; frontmatter helpers
	{"internal/sibling", 0},   // stdlib only: finding tackle's other programs next to this one
	{"internal/yamlbound", 0}, // go-yaml's syntax tree only: what a YAML document expands to
	{"internal/workers", 0},   // stdlib only: goroutines kept between the functions they run
	{"internal/procs", 0},     // stdlib only: GOMAXPROCS from what the process is doing
	{"internal/exetrim", 0},   // x/sys only: an idle process unmaps the pages of its binary it no longer runs
	{"internal/pollfd", 0},    // x/sys only: stdin and stdout through the poller when they are pipes or sockets
	{"internal/mcpstdio", 0},  // the go-sdk's jsonrpc and mcp types only: MCP's stdio transport, for tackled and mcp serve
	{"daemon/event", 1}, {"daemon/socket", 1}, {"daemon/config", 1}, {"daemon/model", 1},
	{"daemon/proc", 1}, // stdlib and x/sys only: starts, records and reaps the daemon's child processes
	{"daemon/store", 2}, {"daemon/tools", 2}, {"daemon/mcp", 2}, {"daemon/skill", 2},
	{"daemon/toolsearch", 2}, {"daemon/permission", 2}, {"daemon/agentdef", 2}, {"daemon/sandbox", 2},
	// design.md puts hook beside permission; a hook's `if` field is a
	// permission rule, so hook sits just above it (permission never imports hook).
	{"daemon/hook", 3},
	{"daemon/session", 4},
	{"daemon/dispatch", 5},
	{"daemon/agent", 6},
	{"daemon/server", 7},
	{"daemon", 8}, // the root package only; subpackages not listed above are unknown
	{"daemon/daemontest", 9},
	{"daemon/cmd", 10},
}

func layerOf(rel string) (int, string, bool) {
	best, bestPrefix := -1, ""
	for _, l := range layers {
		match := rel == l.prefix || (l.prefix != "daemon" && strings.HasPrefix(rel, l.prefix+"/"))
		if match && len(l.prefix) > len(bestPrefix) {
			best, bestPrefix = l.layer, l.prefix
		}
	}
	if bestPrefix == "daemon/tools" {
		// each tool family (tools/fs, tools/search, ...) is its own family
		parts := strings.SplitN(rel, "/", 4)
		if len(parts) >= 3 {
			bestPrefix = strings.Join(parts[:3], "/")
		}
	}
	return best, bestPrefix, best >= 0
}

type pkg struct {
	ImportPath string
	Imports    []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(out)
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("go list: %v", err)
	}
	return pkgs
}

func TestImportRule(t *testing.T) {
	pkgs := listPackages(t)
	if len(pkgs) < 5 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	for _, p := range pkgs {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module+"/") {
				if rel == "daemon/tool" && strings.Contains(strings.Split(imp, "/")[0], ".") {
					t.Errorf("%s imports %s: daemon/tool is stdlib only", rel, imp)
				}
				continue
			}
			irel := strings.TrimPrefix(imp, module+"/")
			if msg := checkImport(rel, irel); msg != "" {
				t.Error(msg)
			}
		}
	}
}

// checkImport returns why rel may not import irel, or "".
func checkImport(rel, irel string) string {
	if strings.HasPrefix(irel, "gen/") {
		ok := rel == "daemon/server" || strings.HasPrefix(rel, "daemon/server/") ||
			rel == "daemon/daemontest" || strings.HasPrefix(rel, "clients/") || strings.HasPrefix(rel, "integration")
		if !ok {
			return fmt.Sprintf("%s imports %s: protobuf types stay in daemon/server and the clients", rel, irel)
		}
		return ""
	}
	// integration/ holds test programs that drive the daemon as a client.
	if strings.HasPrefix(irel, "clients/") && !strings.HasPrefix(rel, "clients/") && !strings.HasPrefix(rel, "integration") {
		return fmt.Sprintf("%s imports %s: nothing imports the clients", rel, irel)
	}
	if strings.HasPrefix(rel, "clients/") {
		// internal/ holds leaf helpers shared with the daemon (layer 0).
		if l, _, _ := layerOf(irel); strings.HasPrefix(irel, "internal/") && l == 0 {
			return ""
		}
		if !(strings.HasPrefix(irel, "clients/") || irel == "daemon/socket") {
			return fmt.Sprintf("%s imports %s: clients import only gen/, clients/, daemon/socket and internal/ leaf packages", rel, irel)
		}
		return ""
	}
	if !strings.HasPrefix(rel, "daemon") {
		return "" // tests and tools outside daemon/ and clients/
	}
	from, fromPrefix, ok := layerOf(rel)
	if !ok {
		return fmt.Sprintf("%s is not in design.md's package list: add it to the layers in deps_test.go", rel)
	}
	to, toPrefix, ok := layerOf(irel)
	if !ok {
		return fmt.Sprintf("%s imports %s, which is not in design.md's package list", rel, irel)
	}
	if fromPrefix == toPrefix {
		return "" // within one package family (e.g. tools/fs and tools/fs/internal/...)
	}
	if to >= from {
		return fmt.Sprintf("%s (layer %d) imports %s (layer %d): imports go downward only", rel, from, irel, to)
	}
	return ""
}

func TestImportRuleCatchesViolations(t *testing.T) {
	bad := [][2]string{
		{"daemon/tool", "daemon/event"},
		{"daemon/session", "daemon/dispatch"},
		{"daemon/tools/fs", "daemon/session"},
		{"daemon/dispatch", "gen/tackle/v1"},
		{"clients/cli", "daemon/session"},
		{"clients/cli", "internal/modeloracle"},
		{"daemon/tools/fs", "daemon/tools/search"},
		{"daemon/permission", "daemon/hook"},
		{"daemon/hook", "daemon/session"},
	}
	for _, b := range bad {
		if checkImport(b[0], b[1]) == "" {
			t.Errorf("%s → %s was accepted", b[0], b[1])
		}
	}
}
