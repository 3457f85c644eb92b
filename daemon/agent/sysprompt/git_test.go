package sysprompt

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitRepo makes a repository in a new directory with one commit on main,
// git's user and system config out of the way.
func gitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	base := t.TempDir()
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(base, "gitconfig"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	dir := filepath.Join(base, "repo")
	mkdir(t, dir)
	run(t, dir, "git", "init", "-q", "-b", "main")
	write(t, filepath.Join(dir, "tracked.txt"), "one\n")
	run(t, dir, "git", "add", "tracked.txt")
	run(t, dir, "git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "first")
	return dir
}

func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestGitStatus(t *testing.T) {
	dir := gitRepo(t)
	ctx := context.Background()
	if got := GitStatus(ctx, dir); got != "## main" {
		t.Errorf("clean: GitStatus = %q, want %q", got, "## main")
	}
	write(t, filepath.Join(dir, "tracked.txt"), "two\n")
	write(t, filepath.Join(dir, "sub", "new.txt"), "new\n")
	want := "## main\n M tracked.txt\n?? sub/"
	if got := GitStatus(ctx, dir); got != want {
		t.Errorf("GitStatus = %q, want %q", got, want)
	}
	// From a subdirectory, the paths are git's (relative to it).
	if got := GitStatus(ctx, filepath.Join(dir, "sub")); !strings.HasPrefix(got, "## main\n M ../tracked.txt") {
		t.Errorf("GitStatus(sub) = %q", got)
	}
	// GIT_DIR pointing elsewhere is not inherited.
	t.Setenv("GIT_DIR", filepath.Join(t.TempDir(), "nothing"))
	if got := GitStatus(ctx, dir); got != want {
		t.Errorf("with GIT_DIR set: GitStatus = %q, want %q", got, want)
	}
}

func TestGitStatusNotARepository(t *testing.T) {
	dir := t.TempDir()
	if _, ok := RepoRoot(dir); ok {
		t.Skip("the temporary directory is inside a repository")
	}
	if got := GitStatus(context.Background(), dir); got != "" {
		t.Errorf("GitStatus = %q, want \"\"", got)
	}
}

func TestGitStatusNoGit(t *testing.T) {
	dir := gitRepo(t)
	t.Setenv("PATH", t.TempDir())
	if got := GitStatus(context.Background(), dir); got != "" {
		t.Errorf("GitStatus without git = %q, want \"\"", got)
	}
}

func TestGitStatusCap(t *testing.T) {
	dir := gitRepo(t)
	for i := range 300 {
		write(t, filepath.Join(dir, fmt.Sprintf("untracked-file-%03d.txt", i)), "x")
	}
	got := GitStatus(context.Background(), dir)
	if len(got) > MaxGitStatus+100 {
		t.Errorf("GitStatus holds %d characters, over about %d", len(got), MaxGitStatus)
	}
	lines := strings.Split(got, "\n")
	shown := lines[:len(lines)-1]
	if want := fmt.Sprintf("… %d more lines (run git status to see them)", 301-len(shown)); lines[len(lines)-1] != want {
		t.Errorf("last line = %q, want %q", lines[len(lines)-1], want)
	}
	for _, l := range shown[1:] {
		if len(l) != len("?? untracked-file-000.txt") {
			t.Errorf("line %q is not whole", l)
		}
	}
}

// The repository's own config cannot make GitStatus run a program.
func TestGitStatusRunsNoRepositoryProgram(t *testing.T) {
	dir := gitRepo(t)
	marker := filepath.Join(t.TempDir(), "ran")
	hook := filepath.Join(t.TempDir(), "hook.sh")
	write(t, hook, "#!/bin/sh\ntouch "+marker+"\n")
	if err := os.Chmod(hook, 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, dir, "git", "config", "core.fsmonitor", hook)
	if got := GitStatus(context.Background(), dir); got != "## main" {
		t.Errorf("with an fsmonitor hook: GitStatus = %q", got)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("GitStatus ran the repository's fsmonitor hook")
	}
	run(t, dir, "git", "status") // the hook is real: plain git runs it
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the test's hook does not run: %v", err)
	}
	run(t, dir, "git", "config", "--unset", "core.fsmonitor")

	for _, tc := range []struct{ key, value, want string }{
		{"filter.evil.clean", "touch " + marker, "filter.evil.clean"},
		{"filter.Evil.process", "touch " + marker, "filter.evil.process"},
		{"include.path", "other.cfg", "include.path"},
		{"includeIf.gitdir:/x/.path", "other.cfg", "includeif.gitdir:/x/.path"},
	} {
		run(t, dir, "git", "config", tc.key, tc.value)
		want := "(git status was not run: " + filepath.Join(dir, ".git", "config") + " sets " + tc.want + ", which would make git run a program)"
		if got := GitStatus(context.Background(), dir); got != want {
			t.Errorf("%s: GitStatus = %q, want %q", tc.key, got, want)
		}
		run(t, dir, "git", "config", "--unset", tc.key)
	}

	// git lfs install's own filters are fine.
	run(t, dir, "git", "config", "filter.lfs.process", "git-lfs filter-process")
	run(t, dir, "git", "config", "filter.lfs.clean", "git-lfs clean -- %f")
	if got := GitStatus(context.Background(), dir); got != "## main" {
		t.Errorf("with git-lfs filters: GitStatus = %q", got)
	}
}

// A linked work tree's hazards are in the main repository's config.
func TestGitStatusWorktree(t *testing.T) {
	dir := gitRepo(t)
	wt := filepath.Join(t.TempDir(), "wt")
	run(t, dir, "git", "worktree", "add", "-q", "-b", "feature", wt)
	if got := GitStatus(context.Background(), wt); got != "## feature" {
		t.Errorf("worktree: GitStatus = %q", got)
	}
	run(t, dir, "git", "config", "filter.x.smudge", "false")
	if got := GitStatus(context.Background(), wt); !strings.Contains(got, filepath.Join(dir, ".git", "config")+" sets filter.x.smudge") {
		t.Errorf("worktree with a filter: GitStatus = %q", got)
	}
}

func TestStatusHazard(t *testing.T) {
	for cfg, want := range map[string]string{
		"":                                  "",
		"[core]\n\tfsmonitor = ./x\n":       "", // turned off on the command line
		"[filter \"a\"]\n\tclean = x":       "filter.a.clean",
		"[filter.a]\nsmudge=x":              "filter.a.smudge",
		"[Include]\n  PATH = x":             "include.path",
		"[includeIf \"onbranch:x\"] path=y": "includeif.onbranch:x.path",
		"[diff \"a\"]\ntextconv = x":        "",
		"[broken\n":                         "a malformed section header",
		"# [filter \"a\"] clean = x\n":      "",
	} {
		if got := statusHazard([]byte(cfg)); got != want {
			t.Errorf("statusHazard(%q) = %q, want %q", cfg, got, want)
		}
	}
}

func TestCapWriter(t *testing.T) {
	w := &capWriter{max: 10}
	fmt.Fprint(w, "abc\n")
	fmt.Fprint(w, "def\nghi\njkl\nmno")
	if got, want := w.String(), "abc\ndef\n… 3 more lines (run git status to see them)"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	w = &capWriter{max: 10}
	fmt.Fprint(w, "abc\ndef\n")
	if got := w.String(); got != "abc\ndef" {
		t.Errorf("String = %q", got)
	}
	w = &capWriter{max: 4}
	fmt.Fprint(w, "abcdefgh\nij\n")
	if got, want := w.String(), "abcd\n… 1 more lines (run git status to see them)"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}

func TestGitEnv(t *testing.T) {
	got := GitEnv([]string{"PATH=/bin", "GIT_DIR=/x", "GIT_WORK_TREE=/y", "GIT_TERMINAL_PROMPT=1", "HOME=/h"})
	want := []string{"PATH=/bin", "HOME=/h", "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("GitEnv = %q, want %q", got, want)
	}
}
