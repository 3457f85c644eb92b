package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// This file reads Claude Code's workspace trust: a directory the person
// trusted in Claude Code's trust dialog (~/.claude.json,
// projects[DIR].hasTrustDialogAccepted: true) is trusted in tackle too,
// unless the user setting trust.importClaude is false. Only the person's
// own files decide it: ~/.claude.json, the user settings files and the
// managed file, never a project's.
//
// Which directories a Claude Code entry covers follows Claude Code
// (2.1.332: the trust check walks from the directory up to its git root;
// changelog 2.1.232: "nested git repositories [no longer inherit] trust
// from a parent directory"):
//   - the entry of the directory's git root (for a linked worktree, of its
//     main checkout) covers the whole repository;
//   - otherwise the entries of the directory and of its parents count up
//     to its git root, and no further: a repository below a trusted
//     directory needs an entry of its own;
//   - a directory outside any git repository is covered by an entry of any
//     parent.

// Trust sources (Trust.Source, TrustEntry.Source).
const (
	// TrustSourceTackle: tackle's trust store (tackle trust).
	TrustSourceTackle = "tackle"
	// TrustSourceClaude: Claude Code's trust dialog (~/.claude.json).
	TrustSourceClaude = "claude"
)

// trustSettingsKey is the user settings block of workspace trust:
// {"trust": {"importClaude": false}} stops counting Claude Code's trust.
const trustSettingsKey = "trust"

// claudeTrust is where Claude Code's trust is read from, and what was read.
// Trust.mu guards it.
type claudeTrust struct {
	claudeJSON string   // ~/.claude.json
	settings   []string // user settings files, then managed: lowest precedence first

	json     stamp
	jsonRead bool
	dirs     map[string]bool // trusted directories, clean and canonical
	listed   []string        // the trusted directories as written (cleaned), sorted
	err      error           // why ~/.claude.json could not be read (nothing counts then)

	flags map[string]*importFlag // by settings path
}

// importFlag is the trust.importClaude value of one settings file.
type importFlag struct {
	stamp stamp
	read  bool
	// value is the last good value (nil: not set). A file that does not
	// parse keeps it, as the Loader keeps a file's last good version.
	value *bool
}

// UseClaudeCode makes t count Claude Code's workspace trust as well
// (trust.importClaude, default on): home is the home directory (where
// ~/.claude.json and ~/.claude/settings.json are), managedPath the managed
// settings file ("" for none). NewLoader calls it for Options.Trust. An
// empty home turns it off.
func (t *Trust) UseClaudeCode(home, managedPath string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if home == "" {
		t.claude = nil
		return
	}
	settings := []string{
		filepath.Join(home, ".claude", "settings.json"),
		filepath.Join(filepath.Dir(t.path), "settings.json"), // ConfigHome/tackle/settings.json
	}
	if managedPath != "" {
		settings = append(settings, managedPath)
	}
	t.claude = &claudeTrust{claudeJSON: filepath.Join(home, ClaudeUserFile), settings: settings, flags: map[string]*importFlag{}}
}

// enabledLocked reports whether trust.importClaude is on: the highest of
// the user and managed settings files that sets it decides; default on.
func (ct *claudeTrust) enabledLocked(memo *statMemo) bool {
	on := true
	for _, p := range ct.settings {
		f := ct.flags[p]
		if f == nil {
			f = &importFlag{}
			ct.flags[p] = f
		}
		st := memo.stat(p)
		if !f.read || st != f.stamp {
			f.read, f.stamp = true, st
			switch v, ok := readImportFlag(p, st); {
			case !st.exists:
				f.value = nil
			case ok:
				f.value = v
			}
		}
		if f.value != nil {
			on = *f.value
		}
	}
	return on
}

// readImportFlag reads trust.importClaude from a settings file; ok is false
// when the file cannot be read or parsed (its last good value stays).
func readImportFlag(path string, st stamp) (*bool, bool) {
	if !st.exists {
		return nil, true
	}
	data, err := readConfigFile(path)
	if err != nil {
		return nil, false
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, true
	}
	var f struct {
		Trust *struct {
			ImportClaude *bool `json:"importClaude"`
		} `json:"trust"`
	}
	if json.Unmarshal(data, &f) != nil {
		return nil, false
	}
	if f.Trust == nil {
		return nil, true
	}
	return f.Trust.ImportClaude, true
}

// dirsLocked returns the directories ~/.claude.json trusts (re-read when
// its stat changed), with the stats of memo (nil: none).
func (ct *claudeTrust) dirsLocked(memo *statMemo) map[string]bool {
	st := memo.stat(ct.claudeJSON)
	if ct.jsonRead && st == ct.json {
		return ct.dirs
	}
	ct.jsonRead, ct.json = true, st
	ct.dirs, ct.listed, ct.err = readClaudeTrust(ct.claudeJSON, st)
	return ct.dirs
}

// readClaudeTrust returns the directories of ~/.claude.json's projects
// whose hasTrustDialogAccepted is true: cleaned and with their canonical
// forms (symlinks resolved) as a set, and as written (cleaned), sorted. A
// file that cannot be read or parsed trusts nothing.
func readClaudeTrust(path string, st stamp) (map[string]bool, []string, error) {
	if !st.exists {
		return nil, nil, nil
	}
	data, err := readConfigFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil, nil
	}
	var f struct {
		Projects map[string]json.RawMessage `json:"projects"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, nil, err
	}
	dirs := map[string]bool{}
	var listed []string
	for k, raw := range f.Projects {
		var p struct {
			HasTrustDialogAccepted *bool `json:"hasTrustDialogAccepted"`
		}
		if !filepath.IsAbs(k) || json.Unmarshal(raw, &p) != nil || p.HasTrustDialogAccepted == nil || !*p.HasTrustDialogAccepted {
			continue
		}
		d := filepath.Clean(k)
		dirs[d] = true
		listed = append(listed, d)
		if real, err := filepath.EvalSymlinks(d); err == nil {
			dirs[filepath.Clean(real)] = true
		}
	}
	slices.Sort(listed)
	return dirs, slices.Compact(listed), nil
}

// claudeLocked returns the directory whose Claude Code entry trusts the
// canonical directory c ("" if none), with the stats of memo (nil: none).
func (t *Trust) claudeLocked(c string, memo *statMemo) string {
	ct := t.claude
	if ct == nil || !ct.enabledLocked(memo) {
		return ""
	}
	dirs := ct.dirsLocked(memo)
	if len(dirs) == 0 {
		return ""
	}
	root, main := gitRoots(c)
	for _, r := range []string{main, root} {
		if r != "" && dirs[r] {
			return r
		}
	}
	for p := c; ; {
		if dirs[p] {
			return p
		}
		if p == root {
			return "" // a repository does not inherit trust from above it
		}
		parent := filepath.Dir(p)
		if parent == p {
			return ""
		}
		p = parent
	}
}

// claudeListLocked returns the directories Claude Code's trust covers
// (those listed in ~/.claude.json), sorted; nil when trust.importClaude is
// off.
func (t *Trust) claudeListLocked() ([]string, error) {
	ct := t.claude
	if ct == nil || !ct.enabledLocked(nil) {
		return nil, nil
	}
	ct.dirsLocked(nil)
	if ct.err != nil {
		return nil, ct.err
	}
	return slices.Clone(ct.listed), nil
}

// gitRoots returns the root of the git work tree that holds dir ("" when
// none) and, when that is a linked worktree, the root of its main checkout.
func gitRoots(dir string) (root, main string) {
	for d := dir; ; {
		fi, err := os.Lstat(filepath.Join(d, ".git"))
		if err == nil && (fi.IsDir() || fi.Mode().IsRegular()) {
			if fi.Mode().IsRegular() {
				main = mainCheckout(d)
			}
			return d, main
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", ""
		}
		d = parent
	}
}

// mainCheckout returns the main checkout of the linked worktree at root
// (its .git file says "gitdir: <main>/.git/worktrees/<name>"), or "".
func mainCheckout(root string) string {
	b, err := os.ReadFile(filepath.Join(root, ".git"))
	if err != nil || len(b) > 4096 {
		return ""
	}
	gitdir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if !ok {
		return ""
	}
	gitdir = strings.TrimSpace(gitdir)
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(root, gitdir)
	}
	common, err := os.ReadFile(filepath.Join(gitdir, "commondir"))
	if err != nil || len(common) > 4096 {
		return ""
	}
	cd := strings.TrimSpace(string(common))
	if !filepath.IsAbs(cd) {
		cd = filepath.Join(gitdir, cd)
	}
	cd = filepath.Clean(cd)
	if filepath.Base(cd) != ".git" {
		return "" // a bare repository's worktree: no main checkout
	}
	if real, err := filepath.EvalSymlinks(filepath.Dir(cd)); err == nil {
		return real
	}
	return filepath.Dir(cd)
}
