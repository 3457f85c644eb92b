package config

import (
	"os"
	"path/filepath"
	"testing"
)

// TestGateSeesEveryChange changes a gated settings path in every way an
// editor, a tool or a person does, and checks that the next synced stat is
// the file system's (made again, not answered from memory), while an
// unrelated change in the same directory leaves it answered from memory.
func TestGateSeesEveryChange(t *testing.T) {
	write := func(t *testing.T, p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name   string
		file   string // the path, under the test's root
		before func(t *testing.T, root, p string)
		change func(t *testing.T, root, p string)
	}{
		{name: "rewritten in place, same size", file: "p/.claude/settings.json",
			before: func(t *testing.T, _, p string) { write(t, p, `{"a":1}`) },
			change: func(t *testing.T, _, p string) { write(t, p, `{"a":2}`) }},
		{name: "chmod", file: "p/.claude/settings.json",
			before: func(t *testing.T, _, p string) { write(t, p, `{}`) },
			change: func(t *testing.T, _, p string) {
				if err := os.Chmod(p, 0o600); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "saved atomically (renamed over)", file: "p/.claude/settings.json",
			before: func(t *testing.T, _, p string) { write(t, p, `{}`) },
			change: func(t *testing.T, _, p string) {
				write(t, p+".tmp", `{"b":true}`)
				if err := os.Rename(p+".tmp", p); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "removed", file: "p/.claude/settings.json",
			before: func(t *testing.T, _, p string) { write(t, p, `{}`) },
			change: func(t *testing.T, _, p string) {
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "created", file: "p/.claude/settings.json",
			before: func(t *testing.T, _, p string) {
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
			},
			change: func(t *testing.T, _, p string) { write(t, p, `{}`) }},
		{name: "created with its directory", file: "p/.tackle/settings.local.json",
			before: func(t *testing.T, root, _ string) {
				if err := os.MkdirAll(filepath.Join(root, "p"), 0o755); err != nil {
					t.Fatal(err)
				}
			},
			change: func(t *testing.T, _, p string) { write(t, p, `{}`) }},
		{name: "written through a hard link elsewhere", file: "p/.claude/settings.json",
			before: func(t *testing.T, root, p string) {
				write(t, p, `{"a":1}`)
				if err := os.MkdirAll(filepath.Join(root, "other"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Link(p, filepath.Join(root, "other", "link.json")); err != nil {
					t.Fatal(err)
				}
			},
			change: func(t *testing.T, root, _ string) {
				f, err := os.OpenFile(filepath.Join(root, "other", "link.json"), os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.WriteAt([]byte("2"), 5); err != nil {
					t.Fatal(err)
				}
				f.Close()
			}},
		{name: "a directory on the way replaced", file: "p/a/b/settings.json",
			before: func(t *testing.T, _, p string) { write(t, p, `{"a":1}`) },
			change: func(t *testing.T, root, p string) {
				if err := os.Rename(filepath.Join(root, "p", "a"), filepath.Join(root, "p", "old")); err != nil {
					t.Fatal(err)
				}
				write(t, p, `{"a":22}`)
			}},
		{name: "a directory on the way made unreadable", file: "p/a/settings.json",
			before: func(t *testing.T, _, p string) { write(t, p, `{}`) },
			change: func(t *testing.T, root, _ string) {
				if err := os.Chmod(filepath.Join(root, "p", "a"), 0o700); err != nil {
					t.Fatal(err)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newStatGate()
			if g.fd < 0 {
				t.Fatal("no inotify descriptor")
			}
			root := t.TempDir()
			p := filepath.Join(root, c.file)
			c.before(t, root, p)
			g.sync()
			first := g.stat(p)
			if first != statFile(p) {
				t.Fatalf("first stat %+v, the file system says %+v", first, statFile(p))
			}
			// Nothing changed: answered from memory, even with an
			// unrelated file written in a directory on its way.
			write(t, filepath.Join(root, "p", "unrelated.json"), "x")
			g.sync()
			if got := g.stat(p); got != first || g.hits != 1 {
				t.Fatalf("unchanged: got %+v (hits %d), want %+v from memory (is %s on a local file system?)", got, g.hits, first, root)
			}
			misses := g.misses
			c.change(t, root, p)
			g.sync()
			got := g.stat(p)
			if want := statFile(p); got != want {
				t.Fatalf("after the change: got %+v, the file system says %+v", got, want)
			}
			if g.misses != misses+1 {
				t.Fatalf("after the change the stamp came from memory (misses %d → %d)", misses, g.misses)
			}
			// And gated again from then on.
			g.sync()
			if g.stat(p); g.hits != 2 {
				t.Fatalf("not gated again after the change: hits %d", g.hits)
			}
		})
	}
}

// TestGateStatsThroughSymlinks: a path with a symlink on its way is statted
// every time (its target may change where no watch looks), and so is
// always right.
func TestGateStatsThroughSymlinks(t *testing.T) {
	g := newStatGate()
	root := t.TempDir()
	for _, d := range []string{"one", "two"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, d, "settings.json"), []byte(d), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(filepath.Join(root, "one"), link); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(link, "settings.json")
	g.sync()
	if got := g.stat(p); got != statFile(p) {
		t.Fatal("first stat differs")
	}
	// Retarget the link's target's file, where the gate watches nothing.
	if err := os.WriteFile(filepath.Join(root, "one", "settings.json"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	g.sync()
	if got := g.stat(p); got != statFile(p) || g.hits != 0 {
		t.Fatalf("through a symlink: got %+v, want %+v, hits %d (want 0)", got, statFile(p), g.hits)
	}
}

// TestLoadAppliesAnEditAtOnce: with the gate answering the stats, a
// settings file edited (a rule added) right before a Load is in force in
// that Load, every time, with no watcher running.
func TestLoadAppliesAnEditAtOnce(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	l := NewLoader(&Options{Home: home, ConfigHome: filepath.Join(home, ".config"), ManagedPath: filepath.Join(home, "managed.json")})
	p := filepath.Join(proj, ".claude", "settings.json")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	for i, rule := range []string{"Bash(a)", "Bash(b)", "Bash(c)", ""} {
		body := `{"permissions":{"deny":["` + rule + `"]}}`
		if rule == "" {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		s, _ := l.Load(proj)
		deny := s.Permissions.Deny
		if rule == "" {
			if len(deny) != 0 {
				t.Fatalf("edit %d: file removed, deny is still %v", i, deny)
			}
			continue
		}
		if len(deny) != 1 || deny[0] != rule {
			t.Fatalf("edit %d: deny is %v, want [%s]", i, deny, rule)
		}
		// Nothing changed since: the same settings, answered from memory.
		if again, _ := l.Load(proj); again != s {
			t.Fatalf("edit %d: an unchanged Load built new settings", i)
		}
	}
}
