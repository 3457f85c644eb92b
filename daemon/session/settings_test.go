package session

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tackle-agent/tackle/daemon/config"
	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/store"
)

// settingsFixture is a manager whose sessions read their settings through
// a real config.Loader: a home with user settings and a trusted project.
type settingsFixture struct {
	m                  *Manager
	home, project      string
	userFile, projFile string
}

func newSettingsFixture(t testing.TB) *settingsFixture {
	t.Helper()
	base := t.TempDir()
	f := &settingsFixture{home: filepath.Join(base, "home"), project: filepath.Join(base, "proj")}
	f.userFile = filepath.Join(f.home, ".claude", "settings.json")
	f.projFile = filepath.Join(f.project, ".claude", "settings.json")
	for _, d := range []string{filepath.Dir(f.userFile), filepath.Dir(f.projFile)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	trust := config.NewTrust(filepath.Join(f.home, ".config"))
	if _, _, err := trust.Trust(f.project, false); err != nil {
		t.Fatal(err)
	}
	loader := config.NewLoader(&config.Options{
		Home: f.home, ConfigHome: filepath.Join(f.home, ".config"), ManagedPath: filepath.Join(base, "managed.json"), Trust: trust,
	})
	st, err := store.Open(filepath.Join(base, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	f.m = NewManager(st, &Options{StateDir: base, Home: f.home, Settings: loader.Load})
	t.Cleanup(func() {
		f.m.Close()
		st.Close()
	})
	return f
}

func writeSettings(t testing.TB, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func mkdirs(t testing.TB, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// The settings' additionalDirectories follow the session's own
// directories, once each, and follow the files as they change; their env
// applies over the client's, which Info and ClientEnviron keep as given.
func TestSettingsDirectoriesAndEnv(t *testing.T) {
	f := newSettingsFixture(t)
	base := filepath.Dir(f.project)
	other, own, later := filepath.Join(base, "other"), filepath.Join(base, "own"), filepath.Join(base, "later")
	mkdirs(t, other, own)
	writeSettings(t, f.projFile, `{"env": {"P": "project", "C": "settings"}, "permissions": {"additionalDirectories": ["../other", "../own", ".", "../later"]}}`)
	writeSettings(t, f.userFile, `{"env": {"U": "user"}, "permissions": {"additionalDirectories": ["~/`+"../other"+`"]}}`)
	s, _, err := f.m.Create(context.Background(), CreateOptions{Cwd: f.project, AdditionalDirs: []string{own}, Env: []string{"C=client", "K=kept"}})
	if err != nil {
		t.Fatal(err)
	}

	if got, want := s.WorkingDirs(), []string{f.project, own, other}; !slices.Equal(got, want) {
		t.Errorf("WorkingDirs = %q, want %q (root, own, then the settings' existing ones, once each)", got, want)
	}
	wantSrc := []WorkingDir{
		{Path: f.project, Origin: OriginRoot},
		{Path: own, Origin: OriginSession},
		{Path: other, Origin: OriginSettings, Source: f.userFile, Scope: config.ScopeUser},
		{Path: later, Origin: OriginSettings, Source: f.projFile, Scope: config.ScopeProject, Missing: true},
	}
	if diff := cmp.Diff(wantSrc, s.WorkingDirSources()); diff != "" {
		t.Errorf("WorkingDirSources (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantSrc[2:], s.Info().SettingsDirs); diff != "" {
		t.Errorf("Info.SettingsDirs (-want +got):\n%s", diff)
	}
	if got, want := s.Environ(), []string{"K=kept", "C=settings", "P=project", "U=user"}; !slices.Equal(got, want) {
		t.Errorf("Environ = %q, want %q", got, want)
	}
	if got, want := s.ClientEnviron(), []string{"C=client", "K=kept"}; !slices.Equal(got, want) || !slices.Equal(s.Info().Env, want) {
		t.Errorf("ClientEnviron = %q, Info.Env = %q; want %q", got, s.Info().Env, want)
	}

	// A missing directory counts once it exists, from the next turn.
	mkdirs(t, later)
	if _, err := s.Append(&event.Event{Type: event.TurnStarted, TurnID: "t1", Turn: &event.Turn{}}); err != nil {
		t.Fatal(err)
	}
	if got, want := s.WorkingDirs(), []string{f.project, own, other, later}; !slices.Equal(got, want) {
		t.Errorf("WorkingDirs once %s exists = %q, want %q", later, got, want)
	}
	// A change of the files applies once reported (the daemon's watcher).
	writeSettings(t, f.projFile, `{}`)
	writeSettings(t, f.userFile, `{"env": {"C": "user"}}`)
	f.m.SettingsChanged()
	if got, want := s.WorkingDirs(), []string{f.project, own}; !slices.Equal(got, want) {
		t.Errorf("WorkingDirs after the settings changed = %q, want %q", got, want)
	}
	if got, want := s.Environ(), []string{"K=kept", "C=user"}; !slices.Equal(got, want) {
		t.Errorf("Environ after the settings changed = %q, want %q", got, want)
	}
	writeSettings(t, f.userFile, `{}`)
	f.m.SettingsChanged()
	if got, want := s.Environ(), []string{"C=client", "K=kept"}; !slices.Equal(got, want) {
		t.Errorf("Environ without settings variables = %q, want the client's %q", got, want)
	}
}

// A session whose client gave no environment gets the daemon's under the
// settings' variables; with none, it stays empty (callers fall back).
func TestSettingsEnvWithoutClientEnv(t *testing.T) {
	f := newSettingsFixture(t)
	s, _, err := f.m.Create(context.Background(), CreateOptions{Cwd: f.project})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Environ(); len(got) != 0 {
		t.Errorf("Environ with no client env and no settings env = %q, want empty", got)
	}
	writeSettings(t, f.userFile, `{"env": {"TK_SETTINGS_ONLY": "1"}}`)
	f.m.SettingsChanged()
	got := s.Environ()
	if !slices.Contains(got, "TK_SETTINGS_ONLY=1") || !slices.ContainsFunc(got, func(kv string) bool { return len(kv) > 5 && kv[:5] == "PATH=" }) {
		t.Errorf("Environ = %q, want the daemon's environment (PATH) and TK_SETTINGS_ONLY=1", got)
	}
}

// BenchmarkWorkingDirs is the cost of WorkingDirs, called several times
// per tool call: without settings; with settings read once (the calls of
// a turn); and with them read at every call (a new turn each time: the
// loader's Load, which stats every settings file).
func BenchmarkWorkingDirs(b *testing.B) {
	b.Run("no-settings", func(b *testing.B) {
		st, err := store.Open(filepath.Join(b.TempDir(), "state.db"))
		if err != nil {
			b.Fatal(err)
		}
		m := NewManager(st, nil)
		defer func() { m.Close(); st.Close() }()
		s, _, err := m.Create(context.Background(), CreateOptions{Cwd: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			s.WorkingDirs()
		}
	})
	b.Run("settings", func(b *testing.B) {
		f := newSettingsFixture(b)
		other := filepath.Join(filepath.Dir(f.project), "other")
		mkdirs(b, other)
		writeSettings(b, f.projFile, `{"env": {"P": "1"}, "permissions": {"additionalDirectories": ["../other"]}}`)
		s, _, err := f.m.Create(context.Background(), CreateOptions{Cwd: f.project, Env: os.Environ()})
		if err != nil {
			b.Fatal(err)
		}
		if got := s.WorkingDirs(); len(got) != 2 {
			b.Fatalf("WorkingDirs = %q", got)
		}
		b.ReportAllocs()
		for b.Loop() {
			s.WorkingDirs()
		}
	})
	b.Run("settings-every-turn", func(b *testing.B) {
		f := newSettingsFixture(b)
		writeSettings(b, f.projFile, `{"env": {"P": "1"}, "permissions": {"additionalDirectories": [".."]}}`)
		s, _, err := f.m.Create(context.Background(), CreateOptions{Cwd: f.project, Env: os.Environ()})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			f.m.SettingsChanged()
			s.WorkingDirs()
		}
	})
}

// BenchmarkEnviron is the cost of Environ with settings variables (every
// Bash call and hook run).
func BenchmarkEnviron(b *testing.B) {
	f := newSettingsFixture(b)
	writeSettings(b, f.userFile, `{"env": {"A": "1", "B": "2"}}`)
	s, _, err := f.m.Create(context.Background(), CreateOptions{Cwd: f.project, Env: os.Environ()})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		s.Environ()
	}
}
