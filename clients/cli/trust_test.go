package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tackle-agent/tackle/clients/cli/internal/render"
	"github.com/tackle-agent/tackle/daemon/daemontest"
)

// writeFileAll writes path, creating its directory.
func writeFileAll(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, path, content)
}

// The directories of permissions.additionalDirectories (a trusted
// project's relative one, the user's absolute one) show in sessions show
// and explain with the file each comes from, and Read works there without
// asking.
func TestSessionsShowSettingsDirectories(t *testing.T) {
	d := daemontest.Start(t)
	base := t.TempDir()
	proj, other, elsewhere := filepath.Join(base, "proj"), filepath.Join(base, "other"), t.TempDir()
	writeFileAll(t, filepath.Join(other, "file.txt"), "other\n")
	projectFile := filepath.Join(proj, ".claude", "settings.json")
	writeFileAll(t, projectFile, `{"permissions": {"additionalDirectories": ["../other"]}}`)
	userFile := filepath.Join(d.Home(), ".claude", "settings.json")
	writeFileAll(t, userFile, `{"permissions": {"additionalDirectories": ["`+elsewhere+`"]}}`)
	tackle(t, d, "", "trust", proj).mustCode(t, 0)
	sid := shellSession(t, d, proj)

	r := tackle(t, d, "", "sessions", "show", sid).mustCode(t, 0)
	for _, want := range []string{
		"also        " + elsewhere + " (permissions.additionalDirectories in " + userFile + ")\n",
		"also        " + other + " (permissions.additionalDirectories in " + projectFile + ")\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("sessions show lacks %q:\n%s", want, r.stdout)
		}
	}
	r = tackle(t, d, "", "sessions", "show", sid, "--json").mustCode(t, 0)
	var s render.SessionJSON
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatal(err)
	}
	want := []render.WorkingDirJSON{
		{Path: elsewhere, Origin: "settings", Source: userFile, Scope: "user"},
		{Path: other, Origin: "settings", Source: projectFile, Scope: "project"},
	}
	if !slices.Equal(s.SettingsDirectories, want) || len(s.AdditionalDirectories) != 0 {
		t.Errorf("sessions show --json: settings_directories %+v, additional_directories %q; want %+v and none", s.SettingsDirectories, s.AdditionalDirectories, want)
	}

	in := `{"file_path":"` + filepath.Join(other, "file.txt") + `"}`
	r = tackle(t, d, "", "explain", "Read", in, "--session", sid).mustCode(t, 0)
	if !strings.HasPrefix(r.stdout, "allow: ") || !strings.Contains(r.stdout, "  working dir  "+other+" (permissions.additionalDirectories in "+projectFile+")\n") {
		t.Errorf("explain Read in an additional directory:\n%s", r.stdout)
	}
	r = tackle(t, d, "", "call", "Read", in, "--session", sid, "--permission-timeout", "1").mustCode(t, 0)
	if !strings.Contains(r.stdout, "other") {
		t.Errorf("Read in an additional directory: %s", r.stdout)
	}

	// An untrusted project's additionalDirectories are not working directories.
	untrusted := filepath.Join(base, "untrusted")
	writeFileAll(t, filepath.Join(untrusted, ".claude", "settings.json"), `{"permissions": {"additionalDirectories": ["../other"]}}`)
	usid := shellSession(t, d, untrusted)
	if r := tackle(t, d, "", "sessions", "show", usid).mustCode(t, 0); strings.Contains(r.stdout, other) {
		t.Errorf("an untrusted project's additional directory shows:\n%s", r.stdout)
	}
	if r := tackle(t, d, "", "explain", "Read", in, "--session", usid).mustCode(t, 0); !strings.HasPrefix(r.stdout, "ask: ") {
		t.Errorf("explain Read in an untrusted project's additional directory:\n%s", r.stdout)
	}
}

// trust --list names who trusts each directory: tackle or Claude Code's
// trust dialog (~/.claude.json); untrust of a directory Claude Code keeps
// trusted says so and names trust.importClaude.
func TestTrustListClaudeCode(t *testing.T) {
	d := daemontest.Start(t)
	base := t.TempDir()
	ours, theirs, declined := filepath.Join(base, "a"), filepath.Join(base, "b"), filepath.Join(base, "c")
	for _, dir := range []string{ours, theirs, declined} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	claudeJSON := filepath.Join(d.Home(), ".claude.json")
	writeFileAll(t, claudeJSON, `{"numStartups": 3, "projects": {"`+theirs+`": {"hasTrustDialogAccepted": true, "allowedTools": []}, "`+declined+`": {"hasTrustDialogAccepted": false}}}`)
	tackle(t, d, "", "trust", ours, "--allow-bypass").mustCode(t, 0)

	r := tackle(t, d, "", "trust", "--list").mustCode(t, 0)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], ours+" ") || !strings.HasSuffix(lines[0], "  tackle (may set bypassPermissions)") ||
		!strings.HasPrefix(lines[1], theirs+" ") || !strings.HasSuffix(lines[1], "  claude (Claude Code's trust dialog, ~/.claude.json; trust.importClaude)") {
		t.Errorf("trust --list:\n%s", r.stdout)
	}
	r = tackle(t, d, "", "trust", "--list", "--json").mustCode(t, 0)
	var dirs []string
	if err := json.Unmarshal([]byte(r.stdout), &dirs); err != nil || !slices.Equal(dirs, []string{ours, theirs}) {
		t.Errorf("trust --list --json = %q, %v; want %q", dirs, err, []string{ours, theirs})
	}

	r = tackle(t, d, "", "untrust", theirs).mustCode(t, 0)
	if want := theirs + " stays trusted: Claude Code's trust dialog was accepted for " + theirs; !strings.HasPrefix(r.stdout, want) || !strings.Contains(r.stdout, `"trust": {"importClaude": false}`) {
		t.Errorf("untrust of a directory Claude Code trusts: %q", r.stdout)
	}
	tackle(t, d, "", "trust", theirs).mustCode(t, 0)
	r = tackle(t, d, "", "untrust", theirs).mustCode(t, 0)
	if !strings.HasPrefix(r.stdout, theirs+" is no longer in tackle's list but stays trusted: Claude Code's") {
		t.Errorf("untrust of a directory both trust: %q", r.stdout)
	}

	// A ~/.claude.json that does not parse trusts nothing: tackle's list
	// still shows, with a warning.
	writeFileAll(t, claudeJSON, `{"projects": `)
	r = tackle(t, d, "", "trust", "--list").mustCode(t, 0)
	if !strings.HasPrefix(r.stdout, ours+" ") || strings.Contains(r.stdout, theirs) || !strings.Contains(r.stderr, "warning: reading Claude Code's workspace trust") {
		t.Errorf("trust --list with a broken ~/.claude.json:\nstdout %s\nstderr %s", r.stdout, r.stderr)
	}
	writeFileAll(t, claudeJSON, `{"projects": {"`+theirs+`": {"hasTrustDialogAccepted": true}}}`)

	// trust.importClaude false stops counting it.
	writeFileAll(t, filepath.Join(d.Home(), ".claude", "settings.json"), `{"trust": {"importClaude": false}}`)
	if r := tackle(t, d, "", "trust", "--list").mustCode(t, 0); strings.Contains(r.stdout, theirs) {
		t.Errorf("trust --list with importClaude false:\n%s", r.stdout)
	}
	if r := tackle(t, d, "", "untrust", theirs).mustCode(t, 0); r.stdout != theirs+" was not trusted\n" {
		t.Errorf("untrust with importClaude false: %q", r.stdout)
	}
}
