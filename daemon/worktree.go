package daemon

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/tackle-agent/tackle/daemon/agent/sysprompt"
	"github.com/tackle-agent/tackle/daemon/session"
)

// worktree is a sub-agent's temporary git worktree (isolation: worktree):
// a new branch from the project's HEAD, checked out under the state
// directory, so the child's edits stay off the parent's working tree. It
// is removed when the child changed nothing, and kept (path and branch
// reported) when it did.
type worktree struct {
	repo   string // the repository's top directory
	path   string
	branch string
	base   string // the commit it started from
}

// gitTimeout bounds each git command of a worktree.
const gitTimeout = 30 * time.Second

// git runs a git command of tackle's own in dir: no hooks, no fsmonitor,
// no inherited repository variables.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	all := append([]string{"--no-pager", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"}, args...)
	cmd := exec.CommandContext(ctx, "git", all...)
	cmd.Dir = dir
	cmd.Env = sysprompt.GitEnv(os.Environ())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("git %s: %s", args[0], msg)
	}
	return strings.TrimSpace(out.String()), nil
}

// makeWorktree creates the worktree of a child of parent.
func (l *subagents) makeWorktree(ctx context.Context, parent *session.Session, callID string) (*worktree, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, fmt.Errorf("isolation \"worktree\" needs git, which is not installed: leave isolation out")
	}
	repo, err := git(ctx, parent.Cwd(), "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("isolation \"worktree\" needs a git repository, and %s is not in one: leave isolation out", parent.Cwd())
	}
	if key, path := sysprompt.GitHazard(repo); key != "" {
		return nil, fmt.Errorf("isolation \"worktree\" was refused: %s sets %s, which would make git run a program during the checkout", path, key)
	}
	base, err := git(ctx, repo, "rev-parse", "HEAD")
	if err != nil {
		return nil, fmt.Errorf("isolation \"worktree\" needs a commit to start from: %v", err)
	}
	var b [4]byte
	rand.Read(b[:])
	short := hex.EncodeToString(b[:])
	w := &worktree{repo: repo, base: base, branch: "tackle/agent-" + short,
		path: filepath.Join(l.d.opts.StateDir, "worktrees", filepath.Base(repo)+"-"+short)}
	if err := os.MkdirAll(filepath.Dir(w.path), 0o700); err != nil {
		return nil, fmt.Errorf("creating the worktree directory: %w", err)
	}
	if _, err := git(ctx, repo, "worktree", "add", "-b", w.branch, w.path, base); err != nil {
		return nil, fmt.Errorf("creating the agent's worktree: %v", err)
	}
	if w.path, err = filepath.EvalSymlinks(w.path); err != nil {
		w.remove(l.d)
		return nil, err
	}
	l.d.log.Debug("agent worktree created", "path", w.path, "branch", w.branch, "call", callID)
	return w, nil
}

// finish removes the worktree when the child left it as it started (no
// change, no commit); otherwise it stays for the person to look at.
func (w *worktree) finish(d *Daemon) {
	ctx := context.Background()
	status, err1 := git(ctx, w.path, "status", "--porcelain")
	head, err2 := git(ctx, w.path, "rev-parse", "HEAD")
	if err1 == nil && err2 == nil && status == "" && head == w.base {
		w.remove(d)
		w.path, w.branch = "", ""
	}
}

// remove deletes the worktree and its branch.
func (w *worktree) remove(d *Daemon) {
	ctx := context.Background()
	if _, err := git(ctx, w.repo, "worktree", "remove", "--force", w.path); err != nil {
		d.log.Warn("removing an agent's worktree", "path", w.path, "error", err)
	}
	if _, err := git(ctx, w.repo, "branch", "-D", w.branch); err != nil {
		d.log.Debug("deleting an agent's worktree branch", "branch", w.branch, "error", err)
	}
}
