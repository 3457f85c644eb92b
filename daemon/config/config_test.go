package config

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type env struct {
	home, configHome, managed, project string
	l                                  *Loader
	trust                              *Trust // the project is trusted; untrustedEnv's is not
}

func newEnv(t *testing.T) *env {
	t.Helper()
	root := t.TempDir()
	e := &env{
		home:       filepath.Join(root, "home"),
		configHome: filepath.Join(root, "xdg"),
		managed:    filepath.Join(root, "etc", "tackle", "managed-settings.json"),
		project:    filepath.Join(root, "proj"),
	}
	for _, d := range []string{e.home, e.configHome, e.project} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	e.trust = NewTrust(e.configHome)
	if _, _, err := e.trust.Trust(e.project, false); err != nil {
		t.Fatal(err)
	}
	e.l = NewLoader(&Options{Home: e.home, ConfigHome: e.configHome, ManagedPath: e.managed, Trust: e.trust})
	return e
}

// untrustedEnv is newEnv with the project not trusted.
func untrustedEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t)
	if _, _, _, err := e.trust.Untrust(e.project); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) path(scope string, tackle bool) string {
	switch {
	case scope == ScopeUser && tackle:
		return filepath.Join(e.configHome, "tackle", "settings.json")
	case scope == ScopeUser:
		return filepath.Join(e.home, ".claude", "settings.json")
	case scope == ScopeProject && tackle:
		return filepath.Join(e.project, ".tackle", "settings.json")
	case scope == ScopeProject:
		return filepath.Join(e.project, ".claude", "settings.json")
	case scope == ScopeLocal && tackle:
		return filepath.Join(e.project, ".tackle", "settings.local.json")
	case scope == ScopeLocal:
		return filepath.Join(e.project, ".claude", "settings.local.json")
	}
	return e.managed
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	// Write atomically, as editors and tackle do, so a watcher never sees half a file.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestSources(t *testing.T) {
	e := newEnv(t)
	got := e.l.Sources(e.project)
	want := []Source{
		{ScopeUser, e.path(ScopeUser, false)},
		{ScopeUser, e.path(ScopeUser, true)},
		{ScopeProject, e.path(ScopeProject, false)},
		{ScopeProject, e.path(ScopeProject, true)},
		{ScopeLocal, e.path(ScopeLocal, false)},
		{ScopeLocal, e.path(ScopeLocal, true)},
		{ScopeManaged, e.managed},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Sources (-want +got):\n%s", d)
	}
	// A project in the home directory: ~/.claude/settings.json counts once, as project.
	got = e.l.Sources(e.home)
	if len(got) != 6 || got[1].Path != filepath.Join(e.home, ".claude", "settings.json") || got[1].Scope != ScopeProject {
		t.Errorf("Sources(home) = %v", got)
	}
	if got := e.l.Sources(""); len(got) != 3 {
		t.Errorf("Sources(\"\") = %v, want user and managed only", got)
	}
}

func TestMerge(t *testing.T) {
	e := newEnv(t)
	write(t, e.path(ScopeUser, false), `{"permissions":{"allow":["Read"],"defaultMode":"plan","askTimeoutSeconds":30},"model":"u1","env":{"A":"user"}}`)
	write(t, e.path(ScopeUser, true), `{"permissions":{"allow":["Grep","Read"],"deny":["Bash(rm:*)"]},"model":"u2"}`)
	write(t, e.path(ScopeProject, false), `{"permissions":{"ask":["Write"],"additionalDirectories":["/p1"]}}`)
	write(t, e.path(ScopeProject, true), `{"permissions":{"defaultMode":"acceptEdits"},"model":"p"}`)
	write(t, e.path(ScopeLocal, false), `{"permissions":{"allow":["Edit"],"additionalDirectories":["/l1"]}}`)
	write(t, e.path(ScopeLocal, true), `{"permissions":{"defaultMode":"dontAsk","disableBypassPermissionsMode":"disable"}}`)

	s, problems := e.l.Load(e.project)
	if problems != nil {
		t.Fatalf("problems: %v", problems)
	}
	want := Permissions{
		DefaultMode:                  "dontAsk",
		AdditionalDirectories:        []string{"/p1", "/l1"},
		Allow:                        []string{"Read", "Grep", "Edit"},
		Ask:                          []string{"Write"},
		Deny:                         []string{"Bash(rm:*)"},
		AskTimeoutSeconds:            30,
		DisableBypassPermissionsMode: "disable",
	}
	if d := cmp.Diff(want, s.Permissions); d != "" {
		t.Errorf("Permissions (-want +got):\n%s", d)
	}
	if got := string(s.Raw["model"]); got != `"p"` {
		t.Errorf("Raw model = %s, want the project's", got)
	}
	if got := string(s.Raw["env"]); got != `{"A":"user"}` {
		t.Errorf("Raw env = %s", got)
	}
	if len(s.Layers) != 6 || s.Layers[0].Source.Scope != ScopeUser || s.Layers[5].Source.Path != e.path(ScopeLocal, true) {
		t.Errorf("Layers = %v", s.Layers)
	}

	// Managed beats everything.
	write(t, e.managed, `{"permissions":{"defaultMode":"default","deny":["WebFetch"]}}`)
	s, _ = e.l.Load(e.project)
	if s.Permissions.DefaultMode != "default" || !cmp.Equal(s.Permissions.Deny, []string{"Bash(rm:*)", "WebFetch"}) {
		t.Errorf("with managed: %+v", s.Permissions)
	}
	// Without a project only user and managed apply.
	s, _ = e.l.Load("")
	if s.Permissions.DefaultMode != "default" || !cmp.Equal(s.Permissions.Allow, []string{"Read", "Grep"}) {
		t.Errorf("without project: %+v", s.Permissions)
	}
}

func TestLoadCaches(t *testing.T) {
	e := newEnv(t)
	p := e.path(ScopeProject, true)
	write(t, p, `{"permissions":{"allow":["Read"]}}`)
	s1, _ := e.l.Load(e.project)
	s2, _ := e.l.Load(e.project)
	if s1 != s2 {
		t.Error("Load re-merged although nothing changed")
	}
	write(t, p, `{"permissions":{"allow":["Grep"]}}`)
	s3, _ := e.l.Load(e.project)
	if s3 == s1 || !cmp.Equal(s3.Permissions.Allow, []string{"Grep"}) {
		t.Errorf("after a change: %+v", s3.Permissions)
	}
	os.Remove(p)
	s4, _ := e.l.Load(e.project)
	if len(s4.Permissions.Allow) != 0 {
		t.Errorf("a removed file still counts: %+v", s4.Permissions)
	}
}

func TestBrokenFileKeepsLastGood(t *testing.T) {
	tests := []struct {
		name      string
		content   string
		line, col int
		msg       string
	}{
		{"syntax", "{\n  \"permissions\": {\n    \"allow\": [\"Read\",]\n  }\n}\n", 3, 22, "invalid character ']'"},
		{"truncated", "{\n  \"permissions\": {\n", 3, 1, "unexpected end of JSON input"},
		{"wrong type", "{\n  \"permissions\": {\"allow\": \"Read\"}\n}", 2, 28, "permissions.allow: expected []string, found a JSON string"},
		{"not an object", "[1, 2]", 1, 1, "settings must be a JSON object, found a JSON array"},
		{"negative timeout", "{\n  \"permissions\": {\"askTimeoutSeconds\": -5}\n}", 2, 40, "permissions.askTimeoutSeconds: expected the seconds an ask waits for an answer (0 or more), found -5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			p := e.path(ScopeLocal, true)
			write(t, p, `{"permissions":{"allow":["Edit"]}}`)
			if _, problems := e.l.Load(e.project); problems != nil {
				t.Fatal(problems)
			}
			write(t, p, tt.content)
			s, problems := e.l.Load(e.project)
			if len(problems) != 1 {
				t.Fatalf("problems = %v, want one", problems)
			}
			pr := problems[0]
			if pr.Path != p || pr.Line != tt.line || pr.Column != tt.col || !strings.Contains(pr.Message, tt.msg) || !strings.Contains(pr.Message, "last good") {
				t.Errorf("problem = %q; want %s:%d:%d: %s ... last good", pr.Error(), p, tt.line, tt.col, tt.msg)
			}
			if !cmp.Equal(s.Permissions.Allow, []string{"Edit"}) {
				t.Errorf("the last good version is not in force: %+v", s.Permissions)
			}
			write(t, p, `{"permissions":{"allow":["Glob"]}}`)
			s, problems = e.l.Load(e.project)
			if problems != nil || !cmp.Equal(s.Permissions.Allow, []string{"Glob"}) {
				t.Errorf("after the fix: %+v, %v", s.Permissions, problems)
			}
		})
	}
	// A broken file with no good version contributes nothing.
	e := newEnv(t)
	write(t, e.path(ScopeUser, true), `{"permissions":`)
	s, problems := e.l.Load(e.project)
	if len(problems) != 1 || len(s.Raw) != 0 || strings.Contains(problems[0].Message, "last good") {
		t.Errorf("broken from the start: %+v, %v", s, problems)
	}
}

func TestEmptyAndNullFiles(t *testing.T) {
	e := newEnv(t)
	write(t, e.path(ScopeUser, true), "  \n")
	write(t, e.path(ScopeUser, false), "null")
	s, problems := e.l.Load(e.project)
	if problems != nil || len(s.Raw) != 0 {
		t.Errorf("empty/null: %+v, %v", s, problems)
	}
}

// waitFor reads Changes until Load(project) satisfies ok, or fails after a
// generous timeout.
// runLoader runs l's watcher until the test ends and waits until it is ready.
func runLoader(t *testing.T, l *Loader) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	var runErr error
	go func() {
		defer wg.Done()
		runErr = l.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		if runErr != nil {
			t.Errorf("Run: %v", runErr)
		}
	})
	<-l.Ready()
}

func waitFor(t *testing.T, l *Loader, project string, ok func(*Settings) bool) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		s, _ := l.Load(project)
		if ok(s) {
			return
		}
		select {
		case _, open := <-l.Changes():
			if !open {
				t.Fatal("Changes closed")
			}
		case <-timeout:
			t.Fatalf("no change seen; settings now %+v", s.Permissions)
		}
	}
}

func TestRunSeesChanges(t *testing.T) {
	e := newEnv(t)
	user := e.path(ScopeUser, true)
	write(t, user, `{"permissions":{"allow":["Read"]}}`)
	e.l.Load(e.project)

	runLoader(t, e.l)

	// A change to an existing file.
	write(t, user, `{"permissions":{"allow":["Grep"]}}`)
	if got := <-e.l.Changes(); got != user {
		// Other paths may come first only if something else changed; there is nothing else.
		t.Errorf("change of %q, want %q", got, user)
	}
	waitFor(t, e.l, e.project, func(s *Settings) bool { return cmp.Equal(s.Permissions.Allow, []string{"Grep"}) })

	// A directory that appears later (.tackle in the project).
	write(t, e.path(ScopeProject, true), `{"permissions":{"deny":["Bash"]}}`)
	waitFor(t, e.l, e.project, func(s *Settings) bool { return cmp.Equal(s.Permissions.Deny, []string{"Bash"}) })

	// A broken write keeps the last good version and is reported.
	os.WriteFile(e.path(ScopeProject, true), []byte(`{"permissions":{"deny":[}`), 0o600)
	waitForProblem(t, e.l, e.project)
	s, _ := e.l.Load(e.project)
	if !cmp.Equal(s.Permissions.Deny, []string{"Bash"}) {
		t.Errorf("last good version lost: %+v", s.Permissions)
	}

	// A project loaded only after Run started is watched too.
	other := filepath.Join(filepath.Dir(e.project), "other")
	os.MkdirAll(filepath.Join(other, ".claude"), 0o700)
	e.l.Load(other)
	write(t, filepath.Join(other, ".claude", "settings.local.json"), `{"permissions":{"ask":["Write"]}}`)
	waitFor(t, e.l, other, func(s *Settings) bool { return cmp.Equal(s.Permissions.Ask, []string{"Write"}) })

	// Removing a file takes its settings away.
	os.Remove(user)
	waitFor(t, e.l, e.project, func(s *Settings) bool { return len(s.Permissions.Allow) == 0 })
}

func waitForProblem(t *testing.T, l *Loader, project string) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		if _, problems := l.Load(project); len(problems) > 0 {
			return
		}
		select {
		case <-l.Changes():
		case <-timeout:
			t.Fatal("the broken file was not reported")
		}
	}
}

func TestRunTwiceAndConcurrentLoad(t *testing.T) {
	e := newEnv(t)
	write(t, e.path(ScopeUser, true), `{"a":1}`)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.l.Run(ctx) }()
	<-e.l.Ready()
	if err := e.l.Run(ctx); err == nil {
		t.Error("a second Run succeeded")
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 20; j++ {
				s, _ := e.l.Load(e.project)
				if string(s.Raw["a"]) != "1" {
					t.Errorf("Raw a = %s", s.Raw["a"])
					return
				}
			}
		}()
	}
	wg.Wait()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	if _, open := <-e.l.Changes(); open {
		// drain what is buffered; the channel must end closed
		for range e.l.Changes() {
		}
	}
}

// TestTruncatedThenBroken: a file caught empty between truncate and write
// must not replace the last good version.
func TestTruncatedThenBroken(t *testing.T) {
	e := newEnv(t)
	p := e.path(ScopeProject, false)
	write(t, p, `{"permissions":{"deny":["Bash"]}}`)
	e.l.Load(e.project)
	os.WriteFile(p, nil, 0o600)
	if s, problems := e.l.Load(e.project); len(s.Permissions.Deny) != 0 || problems != nil {
		t.Errorf("an empty file contributes: %+v, %v", s.Permissions, problems)
	}
	os.WriteFile(p, []byte(`{"permissions":{"deny":[}`), 0o600)
	s, problems := e.l.Load(e.project)
	if len(problems) != 1 || !cmp.Equal(s.Permissions.Deny, []string{"Bash"}) {
		t.Errorf("broken after empty: %+v, %v", s.Permissions, problems)
	}
}
