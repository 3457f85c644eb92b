package sysprompt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/tackle-agent/tackle/internal/gitconfig"
	"github.com/tackle-agent/tackle/internal/safefile"
)

// GitStatusTimeout bounds GitStatus's git command.
const GitStatusTimeout = 2 * time.Second

// MaxGitStatus is about how many characters of git status the prompt gets;
// the rest is counted in lines.
const MaxGitStatus = 2000

// GitStatus returns `git status --short --branch` for the repository
// holding dir, at most about MaxGitStatus characters (whole lines, then a
// count of the lines left out), or "" when dir is not in a repository, git
// is missing or fails. It gives up after GitStatusTimeout (or when ctx
// ends), saying so.
//
// It never lets the repository's own config run a program: a cloned or
// unpacked repository brings its .git/config along, and tackle runs this
// before anyone has looked at it. The fsmonitor hook is turned off on the
// command line and submodules (whose configs are not checked) are not
// looked into; a local config that sets a filter driver (a clean filter
// runs during status) or includes another file makes GitStatus return a
// note instead of running git. Optional locks are not taken, so a status
// running beside the user's own git commands does not disturb them.
func GitStatus(ctx context.Context, dir string) string {
	root, ok := RepoRoot(dir)
	if !ok {
		return ""
	}
	git, err := exec.LookPath("git")
	if err != nil {
		return ""
	}
	if key, path := GitHazard(root); key != "" {
		return fmt.Sprintf("(git status was not run: %s sets %s, which would make git run a program)", path, key)
	}
	ctx, cancel := context.WithTimeout(ctx, GitStatusTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, git, "--no-pager", "--no-optional-locks",
		"-c", "core.fsmonitor=false",
		"status", "--short", "--branch", "--ignore-submodules=all")
	cmd.Dir = dir
	cmd.Env = GitEnv(os.Environ())
	out := &capWriter{max: MaxGitStatus}
	cmd.Stdout = out
	cmd.WaitDelay = 250 * time.Millisecond // a grandchild holding stdout must not hold us
	if err := cmd.Run(); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Sprintf("(git status did not finish within %v)", GitStatusTimeout)
		}
		return ""
	}
	return out.String()
}

// GitEnv is env for a git command of tackle's own: nothing inherited that
// points git at another repository, and no prompt for credentials.
func GitEnv(env []string) []string {
	out := make([]string, 0, len(env)+2)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
			"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_CEILING_DIRECTORIES",
			"GIT_TERMINAL_PROMPT", "GIT_OPTIONAL_LOCKS":
			continue
		}
		out = append(out, kv)
	}
	return append(out, "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0")
}

// capWriter keeps the first max bytes written and counts the lines.
type capWriter struct {
	max   int
	buf   []byte
	lines int  // newlines written
	last  byte // the last byte written
	total int
}

func (w *capWriter) Write(p []byte) (int, error) {
	if room := w.max - len(w.buf); room > 0 {
		w.buf = append(w.buf, p[:min(room, len(p))]...)
	}
	w.lines += bytes.Count(p, []byte{'\n'})
	w.total += len(p)
	if len(p) > 0 {
		w.last = p[len(p)-1]
	}
	return len(p), nil
}

// String is what was written when it fits, else its first whole lines and
// a count of the others.
func (w *capWriter) String() string {
	if w.total <= w.max {
		return strings.TrimRight(string(w.buf), "\n")
	}
	lines := w.lines
	if w.last != '\n' {
		lines++
	}
	kept := w.buf
	if nl := bytes.LastIndexByte(kept, '\n'); nl >= 0 {
		kept = kept[:nl+1]
	}
	shown := bytes.Count(kept, []byte{'\n'})
	if len(kept) > 0 && kept[len(kept)-1] != '\n' {
		shown++ // one long line, cut
	}
	text := strings.TrimRight(strings.ToValidUTF8(string(kept), ""), "\n")
	return fmt.Sprintf("%s\n… %d more lines (run git status to see them)", text, max(lines-shown, 0))
}

// GitHazard returns the first key in the repository's own config files
// that would make git status (or a checkout) run a program, with the
// file's path; "" when there is none. Hooks are not looked at: a git
// command of tackle's turns them off (core.hooksPath).
func GitHazard(root string) (key, path string) {
	for _, p := range gitConfigPaths(root) {
		data, err := safefile.Read(p, safefile.LimitSettings)
		switch {
		case err != nil && missing(err):
			continue
		case err != nil:
			return "a file git reads but tackle cannot (" + reason(err) + ")", p
		}
		if k := statusHazard(data); k != "" {
			return k, p
		}
	}
	return "", ""
}

// gitConfigPaths are the config files of the repository whose work tree is
// root: .git/config (and config.worktree), or for a linked work tree or a
// submodule (.git is a file "gitdir: DIR") DIR's and its common directory's.
func gitConfigPaths(root string) []string {
	dotgit := filepath.Join(root, ".git")
	fi, err := os.Stat(dotgit)
	if err != nil {
		return nil
	}
	dirs := []string{dotgit}
	if !fi.IsDir() {
		b, err := safefile.Read(dotgit, 4096)
		if err != nil {
			return nil
		}
		dir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
		if !ok {
			return nil
		}
		dir = strings.TrimSpace(dir)
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(root, dir)
		}
		dirs = []string{dir}
		if c, err := safefile.Read(filepath.Join(dir, "commondir"), 4096); err == nil {
			common := strings.TrimSpace(string(c))
			if !filepath.IsAbs(common) {
				common = filepath.Join(dir, common)
			}
			dirs = append(dirs, filepath.Clean(common))
		}
	}
	var paths []string
	for _, d := range dirs {
		paths = append(paths, filepath.Join(d, "config"), filepath.Join(d, "config.worktree"))
	}
	return paths
}

// lfsFilters are the values `git lfs install` writes, which run git-lfs
// itself.
var lfsFilters = map[string]bool{
	"git-lfs clean -- %f":    true,
	"git-lfs smudge -- %f":   true,
	"git-lfs filter-process": true,
}

// statusHazard returns the first key of a git config file that makes git
// status run a program ("section.sub.key", lower case), or "". The
// fsmonitor hook is not one (GitStatus turns it off).
func statusHazard(data []byte) string {
	return gitconfig.First(data, func(e gitconfig.Entry) bool {
		switch e.Section {
		case "include", "includeif":
			return e.Key == "path" // a file not read here
		case "filter":
			return (e.Key == "clean" || e.Key == "smudge" || e.Key == "process") && !lfsFilters[e.Value]
		}
		return false
	})
}
