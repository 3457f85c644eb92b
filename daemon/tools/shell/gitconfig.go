package shell

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/tackle-agent/tackle/internal/gitconfig"
	"github.com/tackle-agent/tackle/internal/safefile"
)

// A repository's own .git/config can make the git commands the analysis
// calls read-only run a program: core.fsmonitor on `git status`, a pager
// on `git log`, a textconv or external diff on `git diff`, a clean filter
// on `git status`, a gpg.program on `git log --show-signature`.
// An unpacked archive or a planted checkout brings such a file along, so a
// git command in a repository whose config sets one of these keys (or
// includes a file the analysis does not read) asks.

// gitHazard returns the first command-running key set in the local config
// of the repository whose work tree is root ("" when there is none), with
// the config's path.
func gitHazard(root string) (key, path string) {
	path = gitConfigPath(root)
	if path == "" {
		return "", ""
	}
	return gitConfigs.hazard(path), path
}

// gitConfigPath is the config file of the repository at root: .git/config,
// or for a linked work tree (.git is a file "gitdir: DIR") DIR's common
// directory's config. "" when root has no .git.
func gitConfigPath(root string) string {
	dotgit := filepath.Join(root, ".git")
	fi, err := os.Stat(dotgit)
	switch {
	case err != nil:
		return ""
	case fi.IsDir():
		return filepath.Join(dotgit, "config")
	}
	b, err := safefile.Read(dotgit, 4096)
	if err != nil {
		return ""
	}
	dir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if !ok {
		return ""
	}
	dir = strings.TrimSpace(dir)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(root, dir)
	}
	if c, err := safefile.Read(filepath.Join(dir, "commondir"), 4096); err == nil {
		common := strings.TrimSpace(string(c))
		if !filepath.IsAbs(common) {
			common = filepath.Join(dir, common)
		}
		dir = common
	}
	return filepath.Join(dir, "config")
}

// gitConfigCache remembers each config file's hazard while the file is
// unchanged (the analysis runs at every Bash call).
type gitConfigCache struct {
	mu      sync.Mutex
	entries map[string]gitConfigEntry // by path, bounded
}

type gitConfigEntry struct {
	stamp  fileStamp
	hazard string
}

type fileStamp struct {
	size  int64
	mtime int64
	ino   uint64
}

var gitConfigs = &gitConfigCache{entries: map[string]gitConfigEntry{}}

func (c *gitConfigCache) hazard(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	st := fileStamp{size: fi.Size(), mtime: fi.ModTime().UnixNano(), ino: inode(fi)}
	c.mu.Lock()
	e, ok := c.entries[path]
	c.mu.Unlock()
	if ok && e.stamp == st {
		return e.hazard
	}
	h := ""
	if b, err := safefile.Read(path, safefile.LimitSettings); err != nil {
		h = "a config git reads that tackle cannot (" + err.Error() + ")"
	} else {
		h = configHazard(b)
	}
	c.mu.Lock()
	if len(c.entries) >= 256 {
		clear(c.entries)
	}
	c.entries[path] = gitConfigEntry{stamp: st, hazard: h}
	c.mu.Unlock()
	return h
}

// configHazard returns the first key of a git config file that makes a
// read-only git command run a program ("section.key" or
// "section.sub.key", lower case), or "".
func configHazard(data []byte) string {
	return gitconfig.First(data, func(e gitconfig.Entry) bool {
		return hazardKey(e.Section, e.Sub, e.Key, strings.ToLower(e.Value))
	})
}

// hazardKey reports whether section[.sub].key = value runs a program
// during a command the analysis treats as read-only.
func hazardKey(section, sub, key, value string) bool {
	switch section {
	case "include", "includeif":
		return key == "path" // a file the analysis does not read
	case "core":
		switch key {
		case "fsmonitor":
			return value != "" && value != "true" && value != "false" && value != "0" && value != "1"
		case "pager":
			return value != "" && value != "cat" && value != "less"
		}
	case "pager":
		return value != "" && value != "true" && value != "false" && value != "cat" && value != "less"
	case "diff":
		return key == "external" || sub != "" && (key == "textconv" || key == "command")
	case "filter":
		return key == "clean" || key == "smudge" || key == "process"
	case "gpg":
		return key == "program"
	}
	return false
}

func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}
