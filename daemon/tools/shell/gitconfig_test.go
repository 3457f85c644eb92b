package shell

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A repository's own config that makes a read-only git command run a
// program makes every git command there ask; real git shows the program
// does run.
func TestGitConfigHazards(t *testing.T) {
	for _, tc := range []struct {
		config, hazard string
	}{
		{"[core]\n\trepositoryformatversion = 0\n\tbare = false\n[remote \"origin\"]\n\turl = https://example.com/x.git\n", ""},
		{"[core]\n\tfsmonitor = touch pwned\n", "core.fsmonitor"},
		{"[core]\n\tfsmonitor = true\n", ""},
		{"[core]\n\tpager = sh -c 'touch pwned'\n", "core.pager"},
		{"[pager]\n\tlog = touch pwned\n", "pager.log"},
		{"[diff]\n\texternal = ./x.sh\n", "diff.external"},
		{"[diff \"bin\"]\n\ttextconv = ./x.sh\n", "diff.bin.textconv"},
		{"[filter \"lfs\"]\n\tclean = ./x.sh %f\n", "filter.lfs.clean"},
		{"[gpg]\n\tprogram = ./x.sh\n", "gpg.program"},
		{"[include]\n\tpath = ../other\n", "include.path"},
		{"[includeIf \"gitdir:/\"]\n\tpath = x\n", "includeif.gitdir:/.path"},
		{"[CORE] FSMonitor = \"touch pwned\"\n", "core.fsmonitor"},
	} {
		if got := configHazard([]byte(tc.config)); got != tc.hazard {
			t.Errorf("configHazard(%q) = %q, want %q", tc.config, got, tc.hazard)
		}
	}

	env, _ := accessEnv(t)
	if err := os.MkdirAll(env.Path(".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(config string) {
		if err := os.WriteFile(env.Path(".git/config"), []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("[core]\n\tbare = false\n")
	if acc := bashAccess(t, env, "git status"); acc.AlwaysAsk != "" {
		t.Errorf("git status in an ordinary repository: %q", acc.AlwaysAsk)
	}
	write("[core]\n\tbare = false\n\tfsmonitor = touch pwned\n")
	for _, cmd := range []string{"git status", "git -C src log --oneline", "cd src && git diff"} {
		if acc := bashAccess(t, env, cmd); !strings.Contains(acc.AlwaysAsk, "core.fsmonitor") {
			t.Errorf("%s with core.fsmonitor set: AlwaysAsk %q", cmd, acc.AlwaysAsk)
		}
	}
	// A linked work tree's .git file leads to the common directory's config.
	wt := env.Path("docs")
	if err := os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+env.Path(".git/worktrees/docs")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(env.Path(".git/worktrees/docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(env.Path(".git/worktrees/docs/commondir"), []byte("../..\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := gitConfigPath(wt); got != env.Path(".git/config") {
		t.Errorf("gitConfigPath of a linked work tree: %s", got)
	}

	// The oracle: real git runs the fsmonitor program on `git status`.
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	run := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		cmd.CombinedOutput() //nolint:errcheck // the marker file is the result
	}
	run("init", "-q")
	run("config", "core.fsmonitor", "touch pwned; false")
	run("status")
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err != nil {
		t.Fatalf("git status did not run core.fsmonitor (%v): the hazard test proves nothing", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	if got := configHazard(b); got != "core.fsmonitor" {
		t.Errorf("the config real git wrote: %q", got)
	}
}
