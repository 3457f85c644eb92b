package hook

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tackle-agent/tackle/daemon/config"
)

// plugin writes a plugin directory with this hooks/hooks.json and lists it
// in tackle's user settings ("plugins"), with disableAll when set.
func (f *fixture) plugin(name string, hooks any, disableAll bool) string {
	f.t.Helper()
	dir := filepath.Join(f.home, "plugins", name)
	for path, v := range map[string]any{
		filepath.Join(dir, ".claude-plugin", "plugin.json"): map[string]any{"name": name, "version": "1.0.0"},
		filepath.Join(dir, "hooks", "hooks.json"):           map[string]any{"description": "test hooks", "hooks": hooks},
	} {
		b, _ := json.Marshal(v)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			f.t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			f.t.Fatal(err)
		}
	}
	settings := map[string]any{"plugins": []string{dir}}
	if disableAll {
		settings["disableAllHooks"] = true
	}
	b, _ := json.Marshal(settings)
	path := filepath.Join(f.home, ".config", "tackle", "settings.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		f.t.Fatal(err)
	}
	f.h.Invalidate()
	return dir
}

// A plugin's hooks/hooks.json hooks run, after the settings files', with
// CLAUDE_PLUGIN_ROOT set (so "${CLAUDE_PLUGIN_ROOT}" in a shell command
// is its directory), whether or not the project is trusted; a plugin's
// copy of a settings hook runs as well (it is not de-duplicated with it).
func TestPluginHooks(t *testing.T) {
	f := newFixture(t)
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	script := testdata(t, "record.sh")
	dir := f.plugin("guard", map[string]any{"PreToolUse": []any{
		matcherGroup("Bash", cmdHook(`"${CLAUDE_PLUGIN_ROOT}/../../rec.sh" `+rec)),
		matcherGroup("Bash", cmdHook(script, rec)),
	}}, false)
	// A script reached through ${CLAUDE_PLUGIN_ROOT}: ../../rec.sh from the plugin is home/rec.sh.
	b, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.home, "rec.sh"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	f.write("claude-user", map[string]any{"PreToolUse": []any{matcherGroup("Bash", cmdHook(script, rec))}})
	f.setTrusted(false)
	f.h.PreToolUse(context.Background(), f.call("Bash", `{"command":"ls"}`))
	if n := len(readLines(t, rec)); n != 3 {
		t.Errorf("%d hooks ran, want 3 (the user's, and the plugin's two, the same command included)", n)
	}
	cfg := f.h.Config(f.root)
	hs := cfg.groups[idxPreToolUse]
	if len(hs) != 3 || hs[1].Handlers[0].Plugin == nil || hs[1].Handlers[0].Plugin.Root != dir || hs[1].Handlers[0].Source != (config.Source{Scope: config.ScopePlugin, Path: filepath.Join(dir, "hooks", "hooks.json")}) {
		t.Fatalf("groups: %+v", hs)
	}

	// tackle hooks list names the plugin.
	st, _ := f.loader.Load(f.root)
	var got []string
	for _, e := range List(st) {
		got = append(got, e.Scope+" "+e.State+" "+e.Source)
	}
	hooksFile := filepath.Join(dir, "hooks", "hooks.json") + " [plugin guard]"
	want := []string{
		"user active " + filepath.Join(f.home, ".claude", "settings.json"),
		"plugin active " + hooksFile,
		"plugin active " + hooksFile,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
}

// disableAllHooks stops a plugin's hooks too.
func TestPluginHooksDisableAll(t *testing.T) {
	f := newFixture(t)
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	f.plugin("guard", map[string]any{"PreToolUse": []any{matcherGroup("", cmdHook(testdata(t, "record.sh"), rec))}}, true)
	f.h.PreToolUse(context.Background(), f.call("Bash", `{"command":"ls"}`))
	if n := len(readLines(t, rec)); n != 0 {
		t.Errorf("%d plugin hooks ran with disableAllHooks", n)
	}
}

// A plugin's hooks file that cannot be read, and its bad entries, are
// ignored entries of tackle hooks list, naming the plugin.
func TestPluginHooksProblems(t *testing.T) {
	f := newFixture(t)
	dir := f.plugin("guard", map[string]any{"PreToolUse": []any{matcherGroup("Bash(", cmdHook("true"))}, "TeammateIdle": []any{}}, false)
	manifest := filepath.Join(dir, ".claude-plugin", "plugin.json")
	if err := os.WriteFile(manifest, []byte(`{"name": "guard", "hooks": "./hooks/missing.json"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	st, _ := f.loader.Load(f.root)
	var got []string
	for _, e := range List(st) {
		got = append(got, e.State+" "+e.Source+": "+e.Reason)
	}
	hooksFile := filepath.Join(dir, "hooks", "hooks.json") + " [plugin guard]"
	for _, w := range []string{
		"ignored " + hooksFile + `: entry 1: matcher "Bash(": not a valid regular expression`,
		"ignored " + hooksFile + ": tackle does not run this hook event (yet); its hooks are ignored",
		"ignored " + filepath.Join(dir, "hooks", "missing.json") + " [plugin guard]: the hooks file cannot be read (no such file or directory): its hooks are not loaded",
	} {
		if !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, w) }) {
			t.Errorf("no entry %q in:\n%s", w, strings.Join(got, "\n"))
		}
	}
}

// In exec form (args) both placeholders are replaced in the command and
// each argument; the environment has both either way, and the data
// directory is made.
func TestPluginCommand(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data", "guard-inline")
	h := &Handler{Command: "${CLAUDE_PLUGIN_ROOT}/bin/check", Args: []string{"--cache=${CLAUDE_PLUGIN_DATA}", "${CLAUDE_PROJECT_DIR}"},
		Plugin: &PluginRef{Label: "guard", Root: "/opt/guard", DataDir: data}}
	cmd, args, env := pluginCommand(h, []string{"A=1", "CLAUDE_PLUGIN_ROOT=/wrong"})
	if cmd != "/opt/guard/bin/check" || !slices.Equal(args, []string{"--cache=" + data, "${CLAUDE_PROJECT_DIR}"}) {
		t.Errorf("exec form: %q %q", cmd, args)
	}
	if !slices.Equal(env, []string{"A=1", "CLAUDE_PLUGIN_ROOT=/opt/guard", "CLAUDE_PLUGIN_DATA=" + data}) {
		t.Errorf("env: %q", env)
	}
	if fi, err := os.Stat(data); err != nil || !fi.IsDir() {
		t.Errorf("the data directory was not made: %v", err)
	}
	h.Args = nil
	if cmd, args, _ := pluginCommand(h, nil); cmd != h.Command || args != nil {
		t.Errorf("shell form: %q %q (the shell expands it from the environment)", cmd, args)
	}
}
