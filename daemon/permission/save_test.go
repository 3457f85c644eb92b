package permission

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

func readAllow(t *testing.T, path string) ([]string, map[string]json.RawMessage) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		t.Fatalf("%s is not valid JSON: %v\n%s", path, err, data)
	}
	var p struct {
		Allow []string `json:"allow"`
	}
	if err := json.Unmarshal(top["permissions"], &p); err != nil {
		t.Fatal(err)
	}
	return p.Allow, top
}

func TestSaveRule(t *testing.T) {
	proj := t.TempDir()
	path, err := SaveRule("project", "Bash(npm test *)", proj, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(proj, ".tackle", "settings.local.json"); path != want {
		t.Fatalf("path %s, want %s", path, want)
	}
	// Other keys and their order are kept, existing rules stay, no duplicates.
	writeFile(t, path, `{
  "zeta": {"b": 1, "a": [1, 2]},
  "permissions": {"deny": ["Bash(rm *)"], "allow": ["Bash(ls *)"], "defaultMode": "acceptEdits"},
  "alpha": "x"
}`)
	if _, err := SaveRule("project", "Bash(npm test *)", proj, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := SaveRule("local", "Bash(npm test *), Bash(git push *)", proj, ""); err != nil {
		t.Fatal(err)
	}
	allow, top := readAllow(t, path)
	if got := strings.Join(allow, "|"); got != "Bash(ls *)|Bash(npm test *)|Bash(git push *)" {
		t.Errorf("allow %s", got)
	}
	data, _ := os.ReadFile(path)
	if zi, pi, ai := strings.Index(string(data), `"zeta"`), strings.Index(string(data), `"permissions"`), strings.Index(string(data), `"alpha"`); !(zi < pi && pi < ai) {
		t.Errorf("key order lost:\n%s", data)
	}
	if !strings.Contains(string(top["zeta"]), `"b": 1`) || !strings.Contains(string(data), `"defaultMode": "acceptEdits"`) || !strings.Contains(string(data), `"deny": [`) {
		t.Errorf("other keys changed:\n%s", data)
	}
	if strings.Index(string(data), `"b"`) > strings.Index(string(data), `"a"`) {
		t.Errorf("nested key order lost:\n%s", data)
	}
	// A second save of the same rule changes nothing.
	st1, _ := os.Stat(path)
	if _, err := SaveRule("project", "Bash(ls *)", proj, ""); err != nil {
		t.Fatal(err)
	}
	if st2, _ := os.Stat(path); !os.SameFile(st1, st2) {
		t.Error("file rewritten for a rule it already has")
	}

	// User scope.
	cfg := filepath.Join(t.TempDir(), "cfg")
	up, err := SaveRule("user", "WebFetch(domain:example.com)", "", cfg)
	if err != nil || up != filepath.Join(cfg, "tackle", "settings.json") {
		t.Fatalf("%s %v", up, err)
	}
	if allow, _ := readAllow(t, up); len(allow) != 1 || allow[0] != "WebFetch(domain:example.com)" {
		t.Errorf("user allow %q", allow)
	}
}

func TestSaveRuleErrors(t *testing.T) {
	proj := t.TempDir()
	for _, tc := range []struct {
		scope, rule, root, cfg, msg string
	}{
		{"session", "Bash", proj, "", "not project or user"},
		{"project", "Bash", "rel", "", "not an absolute path"},
		{"user", "Bash", "", "", "not an absolute path"},
		{"project", "Bash(", proj, "", "column 5"},
	} {
		if _, err := SaveRule(tc.scope, tc.rule, tc.root, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("SaveRule(%q, %q): %v, want %q", tc.scope, tc.rule, err, tc.msg)
		}
	}
	// A file that is not valid JSON, or has a wrong shape, is left alone.
	path := filepath.Join(proj, ".tackle", "settings.local.json")
	for _, bad := range []string{`{"permissions": {`, `[1]`, `{"permissions": []}`, `{"permissions": {"allow": "Bash"}}`, `{"permissions": {"allow": [1]}}`} {
		writeFile(t, path, bad)
		if _, err := SaveRule("project", "Bash(ls *)", proj, ""); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: err %v", bad, err)
		}
		if data, _ := os.ReadFile(path); string(data) != bad {
			t.Errorf("%s: file changed to %s", bad, data)
		}
	}
	// Claude Code's files are never written, even through a symlink.
	claude := filepath.Join(proj, ".claude", "settings.local.json")
	writeFile(t, claude, `{}`)
	os.Remove(path)
	if err := os.Symlink(claude, path); err != nil {
		t.Fatal(err)
	}
	if _, err := SaveRule("project", "Bash(ls *)", proj, ""); err == nil || !strings.Contains(err.Error(), "Claude Code") {
		t.Errorf("wrote through a symlink to .claude: %v", err)
	}
	if data, _ := os.ReadFile(claude); string(data) != `{}` {
		t.Errorf(".claude file changed: %s", data)
	}
	// Empty and null files are fine.
	os.Remove(path)
	writeFile(t, path, "  \n")
	if _, err := SaveRule("project", "Bash(ls *)", proj, ""); err != nil {
		t.Error(err)
	}
	writeFile(t, path, `{"permissions": null, "x": null}`)
	if _, err := SaveRule("project", "Bash(ls *)", proj, ""); err != nil {
		t.Error(err)
	}
	if allow, top := readAllow(t, path); len(allow) != 1 || string(top["x"]) != "null" {
		t.Errorf("%q %v", allow, top)
	}
}

// TestSaveRuleConcurrentGoroutines: ten savers at once lose nothing.
func TestSaveRuleConcurrentGoroutines(t *testing.T) {
	proj := t.TempDir()
	path := filepath.Join(proj, ".tackle", "settings.local.json")
	writeFile(t, path, `{"keep": {"me": true}, "permissions": {"allow": ["Bash(ls *)"]}}`)
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := SaveRule("project", fmt.Sprintf("Bash(job%d *)", i), proj, "")
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	checkSaved(t, path, 10)
}

func checkSaved(t *testing.T, path string, n int) {
	t.Helper()
	allow, top := readAllow(t, path)
	want := []string{"Bash(ls *)"}
	for i := 0; i < n; i++ {
		want = append(want, fmt.Sprintf("Bash(job%d *)", i))
	}
	sort.Strings(allow)
	sort.Strings(want)
	if strings.Join(allow, "|") != strings.Join(want, "|") {
		t.Errorf("allow %q\nwant %q", allow, want)
	}
	if string(top["keep"]) != "{\n    \"me\": true\n  }" {
		t.Errorf("other key changed: %s", top["keep"])
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*.tmp"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %q", left)
	}
}

// TestSaveRuleConcurrentProcesses: ten processes (this test binary, run
// again) save at once and lose nothing.
func TestSaveRuleConcurrentProcesses(t *testing.T) {
	if os.Getenv("TACKLE_SAVE_HELPER") != "" {
		t.Skip("in a helper process")
	}
	proj := t.TempDir()
	path := filepath.Join(proj, ".tackle", "settings.local.json")
	writeFile(t, path, `{"keep": {"me": true}, "permissions": {"allow": ["Bash(ls *)"]}}`)
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for i := 0; i < 10; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSaveRuleHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "TACKLE_SAVE_HELPER="+proj, fmt.Sprintf("TACKLE_SAVE_RULE=Bash(job%d *)", i))
		out := new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("helper %d: %v: %s", i, err, outs[i])
		}
	}
	checkSaved(t, path, 10)
}

// TestSaveRuleHelperProcess is the body of one saver process.
func TestSaveRuleHelperProcess(t *testing.T) {
	proj := os.Getenv("TACKLE_SAVE_HELPER")
	if proj == "" {
		t.Skip("only as a helper process")
	}
	if _, err := SaveRule("project", os.Getenv("TACKLE_SAVE_RULE"), proj, ""); err != nil {
		t.Fatal(err)
	}
}
