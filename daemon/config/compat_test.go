package config

// Claude Code compatibility: settings shapes seen in public repositories
// and home directories (testdata/), and what tackle makes of them.

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fixture returns testdata/name with @BASE@ replaced by base.
func fixture(t *testing.T, name, base string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(b), "@BASE@", base)
}

func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// TestClaudeTrustImported: a directory trusted in Claude Code's trust
// dialog (~/.claude.json projects[DIR].hasTrustDialogAccepted) is trusted
// in tackle, with "claude" as its source, as far as Claude Code's own
// rule reaches: down to the directory's git root, not into a repository
// nested below.
func TestClaudeTrustImported(t *testing.T) {
	e := untrustedEnv(t)
	base, err := filepath.EvalSymlinks(filepath.Dir(e.project))
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(base, "work")
	mono := filepath.Join(base, "mono")
	wt := filepath.Join(base, "wt") // a linked worktree of mono
	mkdirs(t, filepath.Join(work, "app", "src"), filepath.Join(work, "nested", ".git"), filepath.Join(work, "nested", "pkg"),
		filepath.Join(mono, ".git", "worktrees", "wt"), filepath.Join(mono, "pkg", "a"), wt, filepath.Join(base, "declined"))
	writeTestFile(t, filepath.Join(mono, ".git", "worktrees", "wt", "commondir"), "../..\n")
	writeTestFile(t, filepath.Join(wt, ".git"), "gitdir: "+filepath.Join(mono, ".git", "worktrees", "wt")+"\n")
	writeTestFile(t, filepath.Join(e.home, ClaudeUserFile), fixture(t, "claude.json", base))

	tests := []struct {
		dir, by string // by "": not trusted
	}{
		{work, work},
		{filepath.Join(work, "app"), work},        // a plain subdirectory: Claude Code walks up
		{filepath.Join(work, "app", "src"), work}, // any depth
		{filepath.Join(work, "nested"), ""},       // a git repository of its own below the trusted directory
		{filepath.Join(work, "nested", "pkg"), ""},
		{mono, mono},
		{filepath.Join(mono, "pkg", "a"), mono}, // inside the trusted repository
		{wt, mono},                              // a worktree: its main checkout's entry
		{filepath.Join(base, "declined"), ""},   // hasTrustDialogAccepted: false
		{base, ""},
	}
	for _, tc := range tests {
		by, ok := e.trust.TrustedBy(tc.dir)
		if by != tc.by || ok != (tc.by != "") {
			t.Errorf("TrustedBy(%s) = %q, %v; want %q", tc.dir, by, ok, tc.by)
		}
		want := ""
		if tc.by != "" {
			want = TrustSourceClaude
		}
		if got := e.trust.Source(tc.dir); got != want {
			t.Errorf("Source(%s) = %q, want %q", tc.dir, got, want)
		}
		if e.trust.BypassAllowed(tc.dir) {
			t.Errorf("Claude Code's trust gives bypassPermissions consent to %s", tc.dir)
		}
	}

	// Load applies a Claude-trusted project's widening settings.
	app := filepath.Join(work, "app")
	writeTestFile(t, filepath.Join(app, ".claude", "settings.json"), `{"permissions": {"allow": ["Bash(npm test)"]}}`)
	st, _ := e.l.Load(app)
	if !st.Trusted || !slices.Equal(st.Permissions.Allow, []string{"Bash(npm test)"}) {
		t.Errorf("Claude-trusted project: trusted %v, allow %q", st.Trusted, st.Permissions.Allow)
	}

	// tackle's own trust wins as the source, and --list shows both.
	if _, _, err := e.trust.Trust(mono, false); err != nil {
		t.Fatal(err)
	}
	if got := e.trust.Source(filepath.Join(mono, "pkg")); got != TrustSourceTackle {
		t.Errorf("Source with both = %q, want tackle", got)
	}
	entries, err := e.trust.Entries()
	if err != nil {
		t.Fatal(err)
	}
	want := []TrustEntry{{Dir: mono, Source: TrustSourceTackle}, {Dir: work, Source: TrustSourceClaude}}
	if d := cmp.Diff(want, entries); d != "" {
		t.Errorf("Entries (-want +got):\n%s", d)
	}
	if l, _ := e.trust.List(); !slices.Equal(l, []string{mono}) {
		t.Errorf("List = %q, want tackle's only", l)
	}
}

// TestClaudeTrustSetting: trust.importClaude (default on) is read from the
// user's and the managed settings only; a project's files cannot turn it
// on, and their "trust" block is reported as not read.
func TestClaudeTrustSetting(t *testing.T) {
	e := untrustedEnv(t)
	writeTestFile(t, filepath.Join(e.home, ClaudeUserFile), `{"projects": {"`+e.project+`": {"hasTrustDialogAccepted": true}}}`)
	if e.trust.Source(e.project) != TrustSourceClaude {
		t.Fatal("Claude Code's trust is not imported by default")
	}
	off := `{"trust": {"importClaude": false}}`
	on := `{"trust": {"importClaude": true}}`

	write(t, e.path(ScopeUser, false), off) // ~/.claude/settings.json
	if e.trust.Trusted(e.project) {
		t.Error("importClaude false in ~/.claude/settings.json: still trusted")
	}
	for _, scope := range []string{ScopeProject, ScopeLocal} {
		write(t, e.path(scope, true), on)
		write(t, e.path(scope, false), on)
	}
	if e.trust.Trusted(e.project) {
		t.Error("a project's file turned Claude Code's trust on")
	}
	st, _ := e.l.Load(e.project)
	if st.Trusted {
		t.Error("Load: trusted by a project's own trust setting")
	}
	n := 0
	for _, l := range st.Ignored {
		if strings.Contains(l, `"trust" in `) && strings.Contains(l, "user settings only") {
			n++
		}
	}
	if n != 4 {
		t.Errorf("ignored %q: want the 4 project files' trust blocks reported", st.Ignored)
	}

	write(t, e.path(ScopeUser, true), on) // tackle's user file wins over Claude Code's
	if !e.trust.Trusted(e.project) {
		t.Error("importClaude true in tackle's user settings: not trusted")
	}
	write(t, e.managed, off) // managed wins over both
	if e.trust.Trusted(e.project) {
		t.Error("importClaude false in managed settings: still trusted")
	}
	write(t, e.managed, `{"trust": {"importClaude": fal`) // broken: its last good value stays
	if e.trust.Trusted(e.project) {
		t.Error("a broken managed file dropped its importClaude false")
	}
	if err := os.Remove(e.managed); err != nil {
		t.Fatal(err)
	}
	if !e.trust.Trusted(e.project) {
		t.Error("managed file removed: tackle's user setting should decide again")
	}
	if entries, err := e.trust.Entries(); err != nil || len(entries) != 1 || entries[0].Source != TrustSourceClaude {
		t.Errorf("Entries = %v, %v", entries, err)
	}
}

// TestClaudeTrustBrokenFile: a ~/.claude.json that does not parse trusts
// nothing, and Entries says why; neither does any directory while tackle's
// own trust file does not parse.
func TestClaudeTrustBrokenFile(t *testing.T) {
	e := untrustedEnv(t)
	writeTestFile(t, filepath.Join(e.home, ClaudeUserFile), `{"projects": {"`+e.project+`": {"hasTrustDialogAccepted": tr`)
	if e.trust.Trusted(e.project) {
		t.Error("a broken ~/.claude.json trusts")
	}
	if _, err := e.trust.Entries(); err == nil || !strings.Contains(err.Error(), ClaudeUserFile) {
		t.Errorf("Entries error %v, want one naming %s", err, ClaudeUserFile)
	}
	// An unreadable tackle trust file trusts nothing, Claude Code's trust included.
	writeTestFile(t, filepath.Join(e.home, ClaudeUserFile), `{"projects": {"`+e.project+`": {"hasTrustDialogAccepted": true}}}`)
	if !e.trust.Trusted(e.project) {
		t.Fatal("not trusted by Claude Code")
	}
	writeTestFile(t, e.trust.Path(), `{"trusted": [`)
	if e.trust.Trusted(e.project) {
		t.Error("a broken trust.json: still trusted through Claude Code")
	}
}

// TestSettingsMCPServersNotRead: "mcpServers" in a settings file that no
// tool reads servers from is reported as such (trusted or not), not as
// servers that start once the project is trusted.
func TestSettingsMCPServersNotRead(t *testing.T) {
	e := untrustedEnv(t)
	projFile := e.path(ScopeProject, false) // .claude/settings.json
	userFile := e.path(ScopeUser, false)    // ~/.claude/settings.json
	tackleLocal := e.path(ScopeLocal, true) // .tackle/settings.local.json: tackle reads its servers
	write(t, projFile, fixture(t, "settings-with-mcpservers.json", ""))
	write(t, userFile, `{"mcpServers": {"memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}}}`)
	write(t, tackleLocal, `{"mcpServers": {"local": {"command": "true"}}}`)

	for _, trusted := range []bool{false, true} {
		if trusted {
			if _, _, err := e.trust.Trust(e.project, false); err != nil {
				t.Fatal(err)
			}
		}
		st, _ := e.l.Load(e.project)
		var stray []string
		for _, l := range st.Ignored {
			if strings.Contains(l, "not read from this file") {
				stray = append(stray, l)
				if !strings.Contains(l, ".mcp.json") || !strings.Contains(l, "~/.claude.json") || !strings.Contains(l, "tackle mcp add") {
					t.Errorf("%q does not say where servers belong", l)
				}
			} else if strings.Contains(l, "MCP server") && !strings.Contains(l, tackleLocal) {
				t.Errorf("trusted=%v: %q reads as servers waiting for trust", trusted, l)
			}
		}
		slices.Sort(stray)
		if len(stray) != 2 || !strings.HasPrefix(stray[0], "1 MCP server in "+userFile) || !strings.HasPrefix(stray[1], "2 MCP servers in "+projFile) {
			t.Errorf("trusted=%v: stray lines %q", trusted, stray)
		}
		waiting := slices.Contains(st.Ignored, "1 MCP server in "+tackleLocal)
		if waiting == trusted {
			t.Errorf("trusted=%v: .tackle/settings.local.json's server listed as waiting for trust: %v (%q)", trusted, waiting, st.Ignored)
		}
		if _, ok := st.Raw["mcpServers"]; ok && !trusted {
			t.Error("mcpServers in Raw of an untrusted project")
		}

		servers, problems := e.l.MCPServers(e.project, nil, nil, trusted)
		var names []string
		for _, s := range servers {
			names = append(names, s.Name)
		}
		if !slices.Equal(names, []string{"local"}) {
			t.Errorf("trusted=%v: servers %q, want only .tackle/settings.local.json's", trusted, names)
		}
		var paths []string
		for _, p := range problems {
			paths = append(paths, p.Path)
			if !strings.Contains(p.Message, "not read") || !strings.Contains(p.Message, ".mcp.json") {
				t.Errorf("problem %v does not say why and where", p)
			}
		}
		slices.Sort(paths)
		if want := []string{userFile, projFile}; !slices.Equal(paths, want) && !slices.Equal(paths, []string{projFile, userFile}) {
			t.Errorf("trusted=%v: problems in %q, want %q", trusted, paths, want)
		}
	}
}

// TestMCPFileWithoutServers: a .mcp.json whose servers are not under
// "mcpServers" (Claude Desktop's entries pasted at the top) is a problem
// naming the file and the entries.
func TestMCPFileWithoutServers(t *testing.T) {
	e := newEnv(t)
	path := filepath.Join(e.project, MCPProjectFile)
	writeTestFile(t, path, fixture(t, "mcp-without-wrapper.json", ""))
	servers, problems := e.l.MCPServers(e.project, nil, nil, true)
	if len(servers) != 0 {
		t.Errorf("servers %v", servers)
	}
	if len(problems) != 1 || problems[0].Path != path || !strings.Contains(problems[0].Message, `no "mcpServers" object`) ||
		!strings.Contains(problems[0].Message, `"docs", "github" look like server entries`) {
		t.Errorf("problems %v", problems)
	}
	writeTestFile(t, path, `{}`)
	if _, problems := e.l.MCPServers(e.project, nil, nil, true); len(problems) != 1 || problems[0].Path != path {
		t.Errorf("an empty .mcp.json: problems %v", problems)
	}
	writeTestFile(t, path, `{"mcpServers": {}}`)
	if _, problems := e.l.MCPServers(e.project, nil, nil, true); len(problems) != 0 {
		t.Errorf("an empty mcpServers: problems %v", problems)
	}
}

// TestAdditionalDirectories: permissions.additionalDirectories of every
// file that applies, resolved: a project file's relative entries against
// its project, a user file's against the session's directory (Claude Code
// resolves them against its working directory), ~/ against the home.
func TestAdditionalDirectories(t *testing.T) {
	e := untrustedEnv(t)
	write(t, e.path(ScopeUser, false), fixture(t, "settings-env-dirs.json", ""))
	write(t, e.path(ScopeProject, false), `{"permissions": {"additionalDirectories": ["../other", "/abs/x", "../other/"]}}`)
	write(t, e.path(ScopeLocal, true), `{"permissions": {"additionalDirectories": ["sub"]}}`)
	root := e.project
	user := []string{filepath.Join(filepath.Dir(root), "shared-lib"), "/opt/datasets", filepath.Join(e.home, "notes")}

	st, _ := e.l.Load(root)
	if got := st.AdditionalDirectories(""); !slices.Equal(got, user) {
		t.Errorf("untrusted: %q, want the user's only %q", got, user)
	}
	if _, _, err := e.trust.Trust(root, false); err != nil {
		t.Fatal(err)
	}
	st, _ = e.l.Load(root)
	want := append(slices.Clone(user), filepath.Join(filepath.Dir(root), "other"), "/abs/x", filepath.Join(root, "sub"))
	if d := cmp.Diff(want, st.AdditionalDirectories(root)); d != "" {
		t.Errorf("trusted (-want +got):\n%s", d)
	}
	// A user entry follows the session's directory; a project's stays with its file.
	if got := st.AdditionalDirectories("/elsewhere/s"); got[0] != "/elsewhere/shared-lib" || got[3] != filepath.Join(filepath.Dir(root), "other") {
		t.Errorf("root /elsewhere/s: %q", got)
	}
	// A symlinked entry is its target, as the session's working directories are.
	target := filepath.Join(t.TempDir(), "target")
	mkdirs(t, target)
	if err := os.Symlink(target, filepath.Join(root, "linked")); err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(target)
	if got := AdditionalDirectory("linked", Source{Scope: ScopeProject, Path: e.path(ScopeProject, false)}, "", e.home); got != real {
		t.Errorf("symlinked entry: %q, want %q", got, real)
	}
	var nilSettings *Settings
	if nilSettings.AdditionalDirectories(root) != nil {
		t.Error("nil settings give directories")
	}
}

// TestEnv: the merged "env" of the files that apply (a higher file's
// variable wins; an untrusted project's env does not apply), applied over
// an environment, and used for ${VAR} in MCP server entries.
func TestEnv(t *testing.T) {
	e := untrustedEnv(t)
	write(t, e.path(ScopeUser, false), fixture(t, "settings-env-dirs.json", ""))
	write(t, e.path(ScopeUser, true), `{"env": {"API_BASE": "https://api.example", "BAD": {"x": 1}, "": "empty"}}`)
	write(t, e.path(ScopeProject, false), `{"env": {"NODE_ENV": "test", "PATH": "/tmp/evil"}}`)
	write(t, filepath.Join(e.project, MCPProjectFile), `{"mcpServers": {"api": {"type": "http", "url": "${API_BASE}/mcp", "headers": {"X-Env": "${NODE_ENV}"}}}}`)
	write(t, e.path(ScopeLocal, false), `{"enableAllProjectMcpServers": true}`)

	user := map[string]string{"NODE_ENV": "development", "DISABLE_TELEMETRY": "1", "USE_BUILTIN_RIPGREP": "false", "API_BASE": "https://api.example"}
	st, _ := e.l.Load(e.project)
	if d := cmp.Diff(user, st.Env()); d != "" {
		t.Errorf("untrusted env (-want +got):\n%s", d)
	}
	environ := []string{"HOME=/h", "NODE_ENV=production", "PATH=/usr/bin", "NODE_ENV=again"}
	wantEnviron := []string{"HOME=/h", "PATH=/usr/bin", "API_BASE=https://api.example", "DISABLE_TELEMETRY=1", "NODE_ENV=development", "USE_BUILTIN_RIPGREP=false"}
	if d := cmp.Diff(wantEnviron, st.Environ(environ)); d != "" {
		t.Errorf("Environ (-want +got):\n%s", d)
	}
	if environ[1] != "NODE_ENV=production" {
		t.Error("Environ changed its argument")
	}

	if _, _, err := e.trust.Trust(e.project, false); err != nil {
		t.Fatal(err)
	}
	st, _ = e.l.Load(e.project)
	env := st.Env()
	if env["NODE_ENV"] != "test" || env["PATH"] != "/tmp/evil" || env["API_BASE"] != "https://api.example" {
		t.Errorf("trusted env %v", env)
	}
	servers, problems := e.l.MCPServers(e.project, []string{"API_BASE=http://from-session", "NODE_ENV=prod"}, nil, true)
	if len(problems) > 0 || len(servers) != 1 {
		t.Fatalf("servers %v, problems %v", servers, problems)
	}
	if s := servers[0]; s.URL != "https://api.example/mcp" || s.Headers["X-Env"] != "test" || len(s.Warnings) > 0 {
		t.Errorf("${VAR} from the settings' env: url %q, headers %v, warnings %q", s.URL, s.Headers, s.Warnings)
	}
	var nilSettings *Settings
	if nilSettings.Env() != nil || !slices.Equal(nilSettings.Environ(environ), environ) {
		t.Error("nil settings change the environment")
	}
}
