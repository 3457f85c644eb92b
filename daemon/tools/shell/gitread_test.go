package shell

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/daemon/tool/tooltest"
)

// TestAccessGitReads checks what the git commands that print content
// read: literal paths as Reads (directories also as RecursiveReads), the
// repository's root as a RepoRead otherwise.
func TestAccessGitReads(t *testing.T) {
	env, outside := accessEnv(t)
	if err := os.Mkdir(env.Path(".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(outside, "repo", ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	expand := pathExpander(env, outside)
	for _, tc := range []struct {
		command             string
		reads, trees, repos []string
		fromSrc             bool // run in src
	}{
		// blobs by path: from the root, or with ./ from where git runs
		{command: "git show HEAD:secrets/key", reads: []string{"R/secrets/key"}},
		{command: "git show :secrets/key", reads: []string{"R/secrets/key"}},
		{command: "git show :0:secrets/key", reads: []string{"R/secrets/key"}},
		{command: "git show HEAD:./secrets/key", reads: []string{"R/secrets/key"}},
		{command: "git -C . show HEAD:secrets/key", reads: []string{"R/secrets/key"}},
		{command: "git --no-pager show HEAD~2:secrets/key", reads: []string{"R/secrets/key"}},
		{command: "git show 'HEAD@{1}:secrets/key'", reads: []string{"R/secrets/key"}},
		{command: "git show HEAD:secrets/key", reads: []string{"R/secrets/key"}, fromSrc: true},
		{command: "git show HEAD:./a.go :../secrets/key", reads: []string{"R/src/a.go", "R/secrets/key"}, fromSrc: true},
		{command: "git -C out/repo show HEAD:x", reads: []string{"O/repo/x"}},
		{command: "git cat-file -p HEAD:secrets/key", reads: []string{"R/secrets/key"}},
		{command: "git cat-file blob :secrets/key", reads: []string{"R/secrets/key"}},
		{command: "git show -s HEAD:secrets/key", reads: []string{"R/secrets/key"}},
		// commits: the pathspecs when literal, else the repository
		{command: "git show", repos: []string{"R"}},
		{command: "git show HEAD~1", repos: []string{"R"}},
		{command: "git show HEAD -- secrets/key", reads: []string{"R/secrets/key"}},
		{command: "git show HEAD -- src", reads: []string{"R/src"}, trees: []string{"R/src"}},
		{command: "git show HEAD -- '*.go'", repos: []string{"R"}},
		{command: "git show HEAD -- ':!secrets'", repos: []string{"R"}},
		{command: "git show -C out/repo HEAD", reads: []string{"O/repo"}, trees: []string{"O/repo"}}, // show's -C finds copies
		{command: "git -C out/repo show HEAD", repos: []string{"O/repo"}},
		{command: "git show --stat HEAD"},
		{command: "git show -s --format=%B HEAD"},
		{command: "git show --stat -p HEAD", repos: []string{"R"}},
		{command: "git show 1a2b3c4d", repos: []string{"R"}},
		{command: "git show -s 1a2b3c4d", repos: []string{"R"}}, // maybe a blob
		{command: "git cat-file -p 1a2b3c4d", repos: []string{"R"}},
		{command: "git cat-file -t HEAD:secrets/key"},
		{command: "git cat-file --batch < list", reads: []string{"R/list"}, repos: []string{"R"}},
		// log: only with patches
		{command: "git log --oneline"},
		{command: "git log -5 --stat"},
		{command: "git log -p", repos: []string{"R"}},
		{command: "git log --patch -3", repos: []string{"R"}},
		{command: "git log -U1 main", repos: []string{"R"}},
		{command: "git log -p -- secrets/key", reads: []string{"R/secrets/key"}},
		{command: "git log -p secrets/key", reads: []string{"R/secrets/key"}},
		{command: "git log -p --follow src/a.go", reads: []string{"R/src/a.go"}},
		{command: "git log -L 1,5:secrets/key", reads: []string{"R/secrets/key"}},
		{command: "git log -L:main:src/a.go --oneline", reads: []string{"R/src/a.go"}},
		{command: "git whatchanged -p", repos: []string{"R"}},
		{command: "git reflog show -p", repos: []string{"R"}},
		{command: "git stash list -p", repos: []string{"R"}},
		{command: "git stash list"},
		{command: "git stash show -p", repos: []string{"R"}},
		{command: "git stash show", repos: []string{"R"}}, // stash.showPatch may make it a patch
		{command: "git stash show --stat"},
		// diff
		{command: "git diff", repos: []string{"R"}},
		{command: "git diff HEAD~1 HEAD", repos: []string{"R"}},
		{command: "git diff --cached -- secrets", reads: []string{"R/secrets"}, trees: []string{"R/secrets"}},
		{command: "git diff HEAD secrets/key", reads: []string{"R/secrets/key"}},
		{command: "git diff HEAD:secrets/key HEAD~1:secrets/key", reads: []string{"R/secrets/key"}},
		{command: "git diff --no-index secrets/key src/a.go", reads: []string{"R/secrets/key", "R/src/a.go"}},
		{command: "git diff --no-index secrets docs", reads: []string{"R/secrets", "R/docs"}, trees: []string{"R/secrets", "R/docs"}},
		{command: "git diff --stat"},
		{command: "git diff --name-only HEAD~3"},
		{command: "git diff-tree -r HEAD"},
		{command: "git diff-tree -p HEAD", repos: []string{"R"}},
		{command: "git diff -O order.txt", reads: []string{"R/order.txt"}, repos: []string{"R"}},
		// grep, blame, archive and the rest
		{command: "git grep pw", repos: []string{"R"}},
		{command: "git grep -n -e pw HEAD~1", repos: []string{"R"}},
		{command: "git grep pw -- src", reads: []string{"R/src"}, trees: []string{"R/src"}},
		{command: "git grep pw secrets", reads: []string{"R/secrets"}, trees: []string{"R/secrets"}},
		{command: "git grep -f pats.txt -- docs", reads: []string{"R/pats.txt", "R/docs"}, trees: []string{"R/docs"}},
		{command: "git grep --no-index pw", reads: []string{"R"}, trees: []string{"R"}, repos: []string{"R"}},
		{command: "git blame secrets/key", reads: []string{"R/secrets/key"}},
		{command: "git blame -L 1,3 HEAD~1 -- secrets/key", reads: []string{"R/secrets/key"}},
		{command: "git annotate src/a.go", reads: []string{"R/src/a.go"}},
		{command: "git blame \"$F\"", repos: []string{"R"}},
		{command: "git archive HEAD", repos: []string{"R"}},
		{command: "git archive -o out.tar HEAD src", reads: []string{"R/src"}, trees: []string{"R/src"}},
		{command: "git archive HEAD:secrets", reads: []string{"R/secrets"}, trees: []string{"R/secrets"}},
		{command: "git archive --remote=origin HEAD"},
		{command: "git format-patch -1 --stdout", repos: []string{"R"}},
		{command: "git format-patch -3 -- src/a.go", reads: []string{"R/src/a.go"}},
		{command: "git range-diff A...B", repos: []string{"R"}},
		{command: "git bundle create all.bundle --all", repos: []string{"R"}},
		{command: "git config -f secrets/key --list", reads: []string{"R/secrets/key"}},
		{command: "git config --blob=HEAD:secrets/key --list", reads: []string{"R/secrets/key"}},
		// no content
		{command: "git status; git branch -a; git ls-files; git rev-parse HEAD; git log --format=%H -1"},
		{command: "git $SUB HEAD"},
	} {
		e := env
		if tc.fromSrc {
			e = tooltest.At(env.Root)
			e.Vars = env.Vars
			e.SetCwd(env.Path("src"))
		}
		acc := bashAccess(t, e, tc.command)
		if diff := cmp.Diff(expand(tc.repos), acc.RepoReads, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%q repo reads (-want +got):\n%s", tc.command, diff)
		}
		if diff := cmp.Diff(expand(tc.trees), acc.RecursiveReads, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%q recursive reads (-want +got):\n%s", tc.command, diff)
		}
		if diff := cmp.Diff(expand(tc.reads), acc.Reads, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%q reads (-want +got):\n%s", tc.command, diff)
		}
	}
}

// TestReadsOracle runs readers for real in a git repository holding a
// secret, and checks that every one that printed the secret said it
// would read it: the file in Reads, or a directory above it in
// RecursiveReads or RepoReads.
func TestReadsOracle(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	env, _ := accessEnv(t)
	const secret = "SECRET-CONTENT-4711"
	if err := os.WriteFile(env.Path("secrets/key"), []byte(secret+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = env.Root
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null", "HOME="+filepath.Dir(env.Root),
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	run(git, "init", "-q")
	run(git, "add", "secrets", "src", "docs")
	run(git, "commit", "-qm", "one")
	if err := os.WriteFile(env.Path("src/a.go"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(git, "commit", "-qam", "two")
	secretPath := env.Path("secrets/key")
	covered := func(acc tool.Access) bool {
		if slices.Contains(acc.Reads, secretPath) {
			return true
		}
		for _, d := range append(acc.RecursiveReads, acc.RepoReads...) {
			if strings.HasPrefix(secretPath, d+"/") {
				return true
			}
		}
		return false
	}
	for _, command := range []string{
		"git show HEAD:secrets/key", "git show :secrets/key", "git show HEAD:./secrets/key", "git -C . show HEAD:secrets/key",
		"git show HEAD~1", "git show --stat HEAD~1", "git cat-file -p HEAD:secrets/key", "git log -p", "git log --oneline",
		"git log -p -- src", "git grep SECRET", "git grep SECRET -- src", "git blame secrets/key", "git diff --no-index secrets/key src/a.go",
		"git diff HEAD~1 HEAD", "git diff --stat HEAD~1", "git archive HEAD | tar -xO", "git format-patch --root -1 --stdout HEAD~1",
		"git log -L 1,1:secrets/key", "git config -f secrets/key --list", "git ls-files | xargs cat",
		"grep -r SECRET .", "grep -R SECRET", "grep -rh SECRET", "grep SECRET -r .", "rg SECRET", "rg -uu SECRET .",
		"find . -path ./.git -prune -o -type f -exec cat {} +", "find secrets -type f | xargs cat", "diff --from-file=secrets/key src/a.go",
		"tar cf - secrets | tar -xO", "cp -r secrets copy && cat copy/key", "y='$(cat secrets/key)'; echo \"${y@P}\"",
		"cat secrets/key", "grep -r SECRET src",
	} {
		acc := bashAccess(t, env, command)
		out := run("bash", "-c", command)
		if strings.Contains(out, secret) && !covered(acc) {
			t.Errorf("%s printed the secret, but reads %q, recursive reads %q, repo reads %q", command, acc.Reads, acc.RecursiveReads, acc.RepoReads)
		}
	}
}
