package config

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// git runs git in dir and returns its output.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestKeepOutOfGit: a local settings file (and its lock) written into a
// repository, at its top or in a subdirectory or a linked worktree, is not
// something git would commit; .gitignore is never touched; outside a
// repository nothing is written.
func TestKeepOutOfGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git here")
	}
	repo := t.TempDir()
	gitIn(t, repo, "init", "-q")
	write := func(dir string) string {
		t.Helper()
		p := filepath.Join(dir, ".tackle", "settings.local.json")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := KeepOutOfGit(p); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{p, p + ".lock", filepath.Join(dir, ".tackle", "settings.json")} {
			if err := os.WriteFile(f, []byte("{}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	write(repo)
	sub := filepath.Join(repo, "svc", "api")
	write(sub)
	write(sub) // twice: no line repeated
	status := gitIn(t, repo, "status", "--porcelain", "--untracked-files=all")
	if strings.Contains(status, "settings.local.json") {
		t.Errorf("git would commit the local settings:\n%s", status)
	}
	if !strings.Contains(status, ".tackle/settings.json") {
		t.Errorf("the shared settings are ignored too:\n%s", status)
	}
	excl, _ := os.ReadFile(filepath.Join(repo, ".git", "info", "exclude"))
	if n := strings.Count(string(excl), "/svc/api/.tackle/settings.local.json\n"); n != 1 {
		t.Errorf("info/exclude has the subdirectory's line %d times:\n%s", n, excl)
	}
	if _, err := os.Stat(filepath.Join(repo, ".gitignore")); err == nil {
		t.Error("a .gitignore was written")
	}

	// A linked worktree shares the repository's info/exclude.
	if err := os.WriteFile(filepath.Join(repo, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "add", "f")
	gitIn(t, repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "f")
	wt := filepath.Join(t.TempDir(), "wt")
	gitIn(t, repo, "worktree", "add", "-q", wt)
	write(wt)
	if status := gitIn(t, wt, "status", "--porcelain", "--untracked-files=all"); strings.Contains(status, "settings.local.json") {
		t.Errorf("git would commit the worktree's local settings:\n%s", status)
	}

	// Outside a repository, and for other files, nothing happens.
	plain := t.TempDir()
	write(plain)
	if err := KeepOutOfGit(filepath.Join(repo, "notes.json")); err != nil {
		t.Error(err)
	}
}
