package daemon_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/daemon/daemontest"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
	"github.com/tackle-agent/tackle/internal/fakemodel"
	"github.com/tackle-agent/tackle/internal/testpeers"
)

// These tests wire two Claude Code settings into sessions: "env" (every
// Bash call and hook of the session gets its variables) and
// permissions.additionalDirectories (working directories of the
// session); an untrusted project's files give neither.

// sessionWithEnv creates a session of cwd with the client environment env.
func sessionWithEnv(t testing.TB, d *daemontest.Daemon, cwd string, env []string) string {
	t.Helper()
	resp, err := d.Client().CreateSession(context.Background(), &tacklev1.CreateSessionRequest{Cwd: cwd, Env: env})
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	return resp.GetSession().GetId()
}

// bash runs command in the session and returns its output; the call must complete.
func (s *stream) bash(command string) string {
	s.t.Helper()
	in, _ := json.Marshal(map[string]string{"command": command})
	tr := s.call("Bash", string(in), "bypassPermissions")
	if tr.result.GetStatus() != "completed" || tr.result.GetIsError() {
		s.t.Fatalf("Bash %q: %v", command, tr.result)
	}
	return strings.TrimSpace(resultText(tr.result))
}

func TestSettingsEnvReachesBashAndHooks(t *testing.T) {
	d := daemontest.Start(t)
	userFile := filepath.Join(d.Home(), ".claude", "settings.json")
	writeFile(t, userFile, `{"env": {"TK_USER": "from-user", "TK_OVER": "user", "TK_NUM": 3}}`)

	// A trusted project: its env applies, over the user's; a hook sees it.
	project := trustedProject(t, d)
	hook := `printf '%s|%s|%s' "$TK_USER" "$TK_PROJECT" "$TK_OVER" > "$CLAUDE_PROJECT_DIR/hook-env.txt"`
	writeFile(t, filepath.Join(project, ".claude", "settings.json"), mustJSON(t, map[string]any{
		"env": map[string]any{"TK_PROJECT": "from-project", "TK_OVER": "project"},
		"hooks": map[string]any{"PreToolUse": []any{map[string]any{
			"matcher": "Bash", "hooks": []any{map[string]any{"type": "command", "command": hook}},
		}}},
	}))
	id := sessionWithEnv(t, d, project, []string{"PATH=" + os.Getenv("PATH"), "TK_OVER=client", "TK_CLIENT=client"})
	s := attach(t, d, id)
	got := s.bash(`printf '%s|%s|%s|%s|%s' "$TK_USER" "$TK_PROJECT" "$TK_OVER" "$TK_CLIENT" "$TK_NUM"`)
	if want := "from-user|from-project|project|client|3"; got != want {
		t.Errorf("Bash in a trusted project sees %q, want %q (user env, project env over it, the client's where the settings set nothing)", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(project, "hook-env.txt")); err != nil || string(b) != "from-user|from-project|project" {
		t.Errorf("the PreToolUse hook saw %q (%v), want from-user|from-project|project", b, err)
	}

	// A change of the settings applies at the next call.
	writeFile(t, userFile, `{"env": {"TK_USER": "changed"}}`)
	if got := s.bash(`printf '%s|%s' "$TK_USER" "$TK_NUM"`); got != "changed|" {
		t.Errorf("after the user settings changed, Bash sees %q, want changed|", got)
	}

	// An untrusted project's env does not apply; the user's does. The
	// session has no client environment: it gets the daemon's (PATH).
	untrusted := t.TempDir()
	writeFile(t, filepath.Join(untrusted, ".claude", "settings.json"), `{"env": {"TK_PROJECT": "untrusted", "TK_UNTRUSTED": "x", "TK_USER": "untrusted"}}`)
	u := attach(t, d, sessionWithEnv(t, d, untrusted, nil))
	if got := u.bash(`printf '%s|%s|%s|%s' "$TK_USER" "$TK_PROJECT" "$TK_UNTRUSTED" "${PATH:+path}"`); got != "changed|||path" {
		t.Errorf("Bash in an untrusted project sees %q, want changed|||path (its project's env ignored)", got)
	}
	// Trusting it makes its env apply.
	if _, err := d.Client().Trust(context.Background(), &tacklev1.TrustRequest{Dir: untrusted}); err != nil {
		t.Fatal(err)
	}
	if got := u.bash(`printf '%s|%s' "$TK_USER" "$TK_UNTRUSTED"`); got != "untrusted|x" {
		t.Errorf("Bash once the project is trusted sees %q, want untrusted|x", got)
	}
}

// settingsDirs returns the settings directories GetSession reports, by path.
func settingsDirs(t testing.TB, d *daemontest.Daemon, id string) map[string]*tacklev1.WorkingDirectory {
	t.Helper()
	gs, err := d.Client().GetSession(context.Background(), &tacklev1.GetSessionRequest{Id: id})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*tacklev1.WorkingDirectory{}
	for _, wd := range gs.GetSession().GetSettingsDirectories() {
		out[wd.GetPath()] = wd
	}
	return out
}

func TestSettingsAdditionalDirectories(t *testing.T) {
	d := daemontest.Start(t)
	base := t.TempDir()
	project, other, elsewhere := filepath.Join(base, "proj"), filepath.Join(base, "other"), t.TempDir()
	writeFile(t, filepath.Join(other, "file.txt"), "in other\n")
	writeFile(t, filepath.Join(elsewhere, "note.txt"), "elsewhere\n")
	if _, err := d.Client().Trust(context.Background(), &tacklev1.TrustRequest{Dir: mkdir(t, project)}); err != nil {
		t.Fatal(err)
	}
	projectFile := filepath.Join(project, ".claude", "settings.json")
	writeFile(t, projectFile, `{"permissions": {"additionalDirectories": ["../other", "../not-there"]}}`)
	userFile := filepath.Join(d.Home(), ".claude", "settings.json")
	writeFile(t, userFile, mustJSON(t, map[string]any{"permissions": map[string]any{"additionalDirectories": []string{elsewhere}}}))

	id := newSession(t, d, project, "")
	s := attach(t, d, id)
	read := func(s *stream, path string) turn {
		t.Helper()
		return s.call("Read", mustJSON(t, map[string]string{"file_path": path}), "")
	}
	for _, f := range []string{filepath.Join(other, "file.txt"), filepath.Join(elsewhere, "note.txt")} {
		if tr := read(s, f); tr.result.GetStatus() != "completed" || tr.asked() {
			t.Errorf("Read of %s (in an additional directory): %v (asked %v); want completed without asking", f, tr.result, tr.asked())
		}
	}
	for _, f := range []string{filepath.Join(other, "file.txt"), filepath.Join(elsewhere, "note.txt")} {
		tr := s.call("Edit", mustJSON(t, map[string]any{"file_path": f, "old_string": "\n", "new_string": " edited\n"}), "acceptEdits")
		if tr.result.GetStatus() != "completed" || tr.asked() {
			t.Errorf("Edit of %s in acceptEdits: %v (asked %v); want completed without asking", f, tr.result, tr.asked())
		}
		if b, _ := os.ReadFile(f); !strings.HasSuffix(string(b), " edited\n") {
			t.Errorf("%s after Edit: %q", f, b)
		}
	}
	// Bash may cd into one and stays there.
	if got := s.bash("cd " + other + " && pwd"); got != other {
		t.Errorf("cd into an additional directory: %q", got)
	}
	if got := s.bash("pwd"); got != other {
		t.Errorf("after cd into an additional directory the next command runs in %q, want %s", got, other)
	}

	dirs := settingsDirs(t, d, id)
	if wd := dirs[other]; wd == nil || wd.GetOrigin() != "settings" || wd.GetSource() != projectFile || wd.GetScope() != "project" || wd.GetMissing() {
		t.Errorf("GetSession's settings directory %s: %v; want from %s (project)", other, wd, projectFile)
	}
	if wd := dirs[elsewhere]; wd == nil || wd.GetSource() != userFile || wd.GetScope() != "user" {
		t.Errorf("GetSession's settings directory %s: %v; want from %s (user)", elsewhere, wd, userFile)
	}
	missing := filepath.Join(base, "not-there")
	if wd := dirs[missing]; wd == nil || !wd.GetMissing() {
		t.Errorf("GetSession's settings directory %s: %v; want it listed as missing", missing, wd)
	}
	// Once it exists, it is a working directory.
	mkdir(t, missing)
	if wd := settingsDirs(t, d, id)[missing]; wd == nil || wd.GetMissing() {
		t.Errorf("%s once created: %v; want present", missing, wd)
	}

	ex, err := d.Client().Explain(context.Background(), &tacklev1.ExplainRequest{
		SessionId: id, Tool: "Read", InputJson: mustJSON(t, map[string]string{"file_path": filepath.Join(other, "file.txt")}),
	})
	if err != nil {
		t.Fatal(err)
	}
	var origins []string
	for _, wd := range ex.GetWorkingDirectories() {
		origins = append(origins, wd.GetOrigin()+" "+wd.GetPath())
	}
	// The user's directory first: the settings files' lowest precedence first.
	if want := []string{"root " + project, "settings " + elsewhere, "settings " + other, "settings " + missing}; ex.GetDecision() != "allow" || !slices.Equal(origins, want) {
		t.Errorf("explain Read in an additional directory: %s, working directories %q; want allow, %q", ex.GetDecision(), origins, want)
	}

	// An untrusted project's additionalDirectories do not apply.
	untrusted, secret := filepath.Join(base, "untrusted"), filepath.Join(base, "other2")
	writeFile(t, filepath.Join(secret, "secret.txt"), "secret\n")
	writeFile(t, filepath.Join(untrusted, ".claude", "settings.json"), `{"permissions": {"additionalDirectories": ["../other2"]}}`)
	uid := newSession(t, d, untrusted, "")
	u := attach(t, d, uid)
	if tr := read(u, filepath.Join(secret, "secret.txt")); !tr.asked() || tr.result.GetStatus() == "completed" {
		t.Errorf("Read in an untrusted project's additional directory: %v (asked %v); want asked (and denied)", tr.result, tr.asked())
	}
	udirs := settingsDirs(t, d, uid)
	if _, ok := udirs[secret]; ok || udirs[elsewhere] == nil {
		t.Errorf("untrusted project's settings directories: %v; want the user's %s only", udirs, elsewhere)
	}
}

// mkdir creates dir (and its parents) and returns it.
func mkdir(t testing.TB, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A sub-agent's session has its parent's root: the settings' env and
// directories apply to it as they do to the parent, computed again, not
// copied into its own.
func TestSettingsEnvAndDirectoriesInSubagent(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithPermissionTimeout(2*time.Second))
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-test"})
	id, _ := agentSession(t, d, fm)
	extra := t.TempDir()
	file := filepath.Join(extra, "file.txt")
	writeFile(t, file, "from the additional directory\n")
	writeFile(t, filepath.Join(d.Home(), ".claude", "settings.json"), mustJSON(t, map[string]any{
		"env":         map[string]string{"TK_AGENT": "agent-sees-it"},
		"permissions": map[string]any{"additionalDirectories": []string{extra}},
	}))
	fm.SetScript(fakemodel.Conversations(
		fakemodel.Route{Prompt: "[child]", Script: fakemodel.Turns(
			fakemodel.Reply(fakemodel.ToolUse("Bash", map[string]any{"command": `printf '%s' "$TK_AGENT"`}), fakemodel.ToolUse("Read", map[string]any{"file_path": file})),
			fakemodel.Say("Done."),
		)},
		fakemodel.Route{Prompt: "[parent]", Script: fakemodel.Turns(
			fakemodel.Reply(agentCall("general-purpose", "Look", "[child] print the variable and read the file")),
			fakemodel.Say("Done."),
		)},
	))
	s := attach(t, d, id)
	if p, _ := promptAndWait(t, d, s, "[parent] go"); p.GetStopReason() != "end_turn" {
		t.Fatalf("the parent's prompt ended %+v", p)
	}
	child := requestsOf(fm, "[child]")
	if len(child) != 2 {
		t.Fatalf("%d child requests, want 2", len(child))
	}
	results := strings.Join(resultTexts(child[1]), "\n")
	if !strings.Contains(results, "agent-sees-it") || !strings.Contains(results, "from the additional directory") {
		t.Errorf("the child's tool results:\n%s\nwant the settings' variable and the file's content", results)
	}
	var childID string
	for _, r := range requestsOf(fm, "[parent]") {
		for _, tr := range r.ToolResults() {
			if m := regexp.MustCompile(`agentId: (s_[0-9a-f]+)`).FindStringSubmatch(tr.Content); m != nil {
				childID = m[1]
			}
		}
	}
	if childID == "" {
		t.Fatal("no agentId in the Agent result")
	}
	gs, err := d.Client().GetSession(context.Background(), &tacklev1.GetSessionRequest{Id: childID})
	if err != nil {
		t.Fatal(err)
	}
	cs := gs.GetSession()
	if len(cs.GetAdditionalDirectories()) != 0 || len(cs.GetSettingsDirectories()) != 1 || cs.GetSettingsDirectories()[0].GetPath() != extra {
		t.Errorf("the child session: additional %q, settings %v; want none of its own and %s from the settings", cs.GetAdditionalDirectories(), cs.GetSettingsDirectories(), extra)
	}
}

// A sandboxed command may write in the settings' additional directories
// (a missing one is left out of the sandbox, not an error) and sees
// their env.
func TestSettingsDirectoriesAndEnvInSandbox(t *testing.T) {
	needSandbox(t)
	d := daemontest.Start(t)
	extra, outside := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(d.Options().ConfigHome, "tackle", "settings.json"), mustJSON(t, map[string]any{
		"sandbox":     map[string]any{"enabled": true},
		"env":         map[string]string{"TK_SANDBOXED": "inside"},
		"permissions": map[string]any{"additionalDirectories": []string{extra, filepath.Join(outside, "missing")}},
	}))
	s := attach(t, d, newSession(t, d, t.TempDir(), ""))
	tr := s.call("Bash", bash(`echo made > `+filepath.Join(extra, "made.txt")+` && printf '%s' "$TK_SANDBOXED"`), "")
	if tr.asked() || strings.TrimSpace(resultText(tr.result)) != "inside" {
		t.Errorf("sandboxed command in an additional directory: %v (asked %v)", tr.result, tr.asked())
	}
	if b, err := os.ReadFile(filepath.Join(extra, "made.txt")); err != nil || string(b) != "made\n" {
		t.Errorf("the file written in the additional directory: %q, %v", b, err)
	}
	tr = s.call("Bash", bash("echo x > "+filepath.Join(outside, "new.txt")), "")
	if !strings.Contains(resultText(tr.result), "Read-only file system") {
		t.Errorf("a write outside every working directory: %s", resultText(tr.result))
	}
}

// A stdio MCP server gets the settings' env under its own entry's env
// (its own values win), as Claude Code starts them.
func TestSettingsEnvReachesMCPServers(t *testing.T) {
	d := daemontest.Start(t)
	bin := testpeers.Bin(t, "mcp-server-everything")
	writeFile(t, filepath.Join(d.Options().ConfigHome, "tackle", "settings.json"), mustJSON(t, map[string]any{
		"env": map[string]any{"TK_FROM_SETTINGS": "settings", "TK_BOTH": "settings"},
		"mcpServers": map[string]any{"ev": map[string]any{"command": bin, "args": []string{"stdio"},
			"env": map[string]any{"TK_BOTH": "entry"}}},
	}))
	dir := t.TempDir()
	id := sessionWithEnv(t, d, dir, []string{"PATH=" + os.Getenv("PATH")})
	s := attach(t, d, id)
	s.waitConnected(d, "ev")
	tr := s.call("mcp__ev__get-env", `{}`, "bypassPermissions")
	out := resultText(tr.result)
	if tr.result.GetStatus() != "completed" || !strings.Contains(out, `"TK_FROM_SETTINGS": "settings"`) || !strings.Contains(out, `"TK_BOTH": "entry"`) {
		t.Fatalf("get-env = %s %v", out, tr.result)
	}
}
