package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// TrustFile is the name of the trust store under ConfigHome/tackle.
const TrustFile = "trust.json"

// Trust is the workspace trust store: the directories whose project
// settings may widen access or run code (allow rules, additionalDirectories,
// hooks, MCP servers). A directory is trusted when it or one of its parents
// is listed, or (see UseClaudeCode, claudetrust.go) when Claude Code's trust
// dialog was accepted for it. tackle's list lives in
// $XDG_CONFIG_HOME/tackle/trust.json; every change is written atomically
// (temp file + rename) under an flock of trust.json.lock, so several
// processes changing it at once lose nothing. It is safe for concurrent
// use; a change made by another process (or by Claude Code) is seen at the
// next call (the files are re-read when their stat changes).
type Trust struct {
	path string

	mu     sync.Mutex // guards the fields below
	stamp  stamp
	loaded bool         // stamp and dirs reflect a read
	dirs   trustList    // sorted, cleaned, absolute
	err    error        // the last read's error, reported by List
	claude *claudeTrust // Claude Code's trust (nil: not counted)

	canon map[string]string // canonical forms of the directories asked about, bounded
}

// maxCanon bounds Trust's cache of canonical directories.
const maxCanon = 256

// trustFileJSON is the file's shape.
type trustFileJSON struct {
	Trusted []string `json:"trusted"`
	// AllowBypass are trusted directories whose project settings may set
	// permissions.defaultMode bypassPermissions (tackle trust --allow-bypass).
	AllowBypass []string `json:"allowBypass,omitempty"`
}

// trustList is the trust file's content: trusted directories, and those of
// them whose settings may turn permission checks off.
type trustList struct {
	trusted, bypass []string // sorted, cleaned, absolute
}

// NewTrust returns the trust store of configHome ($XDG_CONFIG_HOME). It
// reads nothing yet.
func NewTrust(configHome string) *Trust {
	return &Trust{path: filepath.Join(configHome, "tackle", TrustFile)}
}

// Path returns the trust file's path.
func (t *Trust) Path() string { return t.path }

// canonical makes dir absolute and clean, with symlinks resolved when it
// exists (so a trusted /link and its target are the same directory).
func canonical(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("the directory is empty")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolving directory %q: %w", dir, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	return filepath.Clean(abs), nil
}

// refreshLocked re-reads the file when its stat changed, with the stats of
// memo (nil: none).
func (t *Trust) refreshLocked(memo *statMemo) {
	st := memo.stat(t.path)
	if t.loaded && st == t.stamp {
		return
	}
	t.stamp, t.loaded = st, true
	t.dirs, t.err = readTrust(t.path)
}

// readTrust reads the trusted directories from path; a missing file is an
// empty list.
func readTrust(path string) (trustList, error) {
	b, err := readConfigFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return trustList{trusted: []string{}}, nil
	}
	if err != nil {
		return trustList{}, fmt.Errorf("reading trust file: %w (nothing is trusted until it can be read)", err)
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return trustList{trusted: []string{}}, nil
	}
	var f trustFileJSON
	if err := json.Unmarshal(b, &f); err != nil {
		return trustList{}, fmt.Errorf("reading trust file %q: %w (fix or remove it: nothing is trusted until then)", path, err)
	}
	return trustList{trusted: cleanDirs(f.Trusted), bypass: cleanDirs(f.AllowBypass)}, nil
}

// cleanDirs keeps the absolute directories of dirs, cleaned, sorted, once.
func cleanDirs(dirs []string) []string {
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		if filepath.IsAbs(d) {
			out = append(out, filepath.Clean(d))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Trusted reports whether dir or one of its parents is trusted, by tackle
// or by Claude Code. A trust file that cannot be read trusts nothing.
func (t *Trust) Trusted(dir string) bool {
	_, ok := t.TrustedBy(dir)
	return ok
}

// TrustedBy returns the directory whose trust makes dir trusted: dir itself
// or its nearest parent listed by tackle, else the directory whose Claude
// Code entry covers it (see Source).
func (t *Trust) TrustedBy(dir string) (string, bool) {
	by, _, _ := t.lookup(dir)
	return by, by != ""
}

// Source returns who trusts dir: TrustSourceTackle (tackle trust; it wins
// when both do), TrustSourceClaude (Claude Code's trust dialog, counted
// while trust.importClaude is on), or "" when dir is not trusted.
func (t *Trust) Source(dir string) string {
	_, src, _ := t.lookup(dir)
	return src
}

// BypassAllowed reports whether dir is trusted by tackle and the person
// allowed its project settings to set the bypassPermissions mode (tackle
// trust --allow-bypass, on dir or a parent). Claude Code's trust never
// gives that consent.
func (t *Trust) BypassAllowed(dir string) bool {
	_, _, bypass := t.lookup(dir)
	return bypass
}

// lookup returns the directory whose trust covers dir ("" if none), its
// source, and whether dir's bypassPermissions consent is recorded.
func (t *Trust) lookup(dir string) (by, source string, bypass bool) {
	return t.lookupWith(dir, nil)
}

// lookupWith is lookup with the stats of memo (nil: none).
func (t *Trust) lookupWith(dir string, memo *statMemo) (by, source string, bypass bool) {
	// Resolving symlinks costs a system call per path component: the
	// canonical form of a directory asked about (a session root, at every
	// permission decision) is kept.
	t.mu.Lock()
	c, ok := t.canon[dir]
	t.mu.Unlock()
	if !ok {
		var err error
		if c, err = canonical(dir); err != nil {
			return "", "", false
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !ok {
		if t.canon == nil || len(t.canon) >= maxCanon {
			t.canon = map[string]string{}
		}
		t.canon[dir] = c
	}
	t.refreshLocked(memo)
	best := ""
	for _, d := range t.dirs.trusted {
		if within(c, d) && len(d) > len(best) {
			best = d
		}
	}
	if best == "" {
		if t.err != nil {
			return "", "", false // an unreadable trust file trusts nothing, Claude Code's trust included
		}
		if by := t.claudeLocked(c, memo); by != "" {
			return by, TrustSourceClaude, false
		}
		return "", "", false
	}
	for _, d := range t.dirs.bypass {
		if within(c, d) {
			return best, TrustSourceTackle, true
		}
	}
	return best, TrustSourceTackle, false
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	if path == dir || dir == "/" {
		return true
	}
	return strings.HasPrefix(path, dir+string(filepath.Separator))
}

// TrustEntry is one trusted directory and who trusts it.
type TrustEntry struct {
	Dir string
	// Source is TrustSourceTackle or TrustSourceClaude.
	Source string
	// AllowBypass: the directory's project settings may set
	// bypassPermissions (tackle trust --allow-bypass).
	AllowBypass bool
}

// Entries returns every trusted directory with its source, for tackle
// trust --list: tackle's list, then the directories Claude Code's trust
// dialog was accepted for (while trust.importClaude is on), sorted by
// directory; a directory both trust is listed once, as tackle's. A Claude
// Code entry covers what the rules of claudetrust.go say, not always every
// subdirectory. An unreadable trust file is an error; an unreadable
// ~/.claude.json is one too (it trusts nothing then).
func (t *Trust) Entries() ([]TrustEntry, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.refreshLocked(nil)
	if t.err != nil {
		return nil, t.err
	}
	var out []TrustEntry
	seen := map[string]bool{}
	for _, d := range t.dirs.trusted {
		seen[d] = true
		out = append(out, TrustEntry{Dir: d, Source: TrustSourceTackle, AllowBypass: slices.Contains(t.dirs.bypass, d)})
	}
	cc, err := t.claudeListLocked()
	if err != nil {
		return nil, fmt.Errorf("reading Claude Code's workspace trust from %s: %w (it trusts nothing until it can be read)", t.claude.claudeJSON, err)
	}
	for _, d := range cc {
		if !seen[d] {
			out = append(out, TrustEntry{Dir: d, Source: TrustSourceClaude})
		}
	}
	slices.SortStableFunc(out, func(a, b TrustEntry) int { return strings.Compare(a.Dir, b.Dir) })
	return out, nil
}

// List returns the directories tackle trusts (tackle trust), sorted; see
// Entries for Claude Code's too.
func (t *Trust) List() ([]string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.refreshLocked(nil)
	if t.err != nil {
		return nil, t.err
	}
	return append([]string{}, t.dirs.trusted...), nil
}

// Trust adds dir; with allowBypass its project settings may also set the
// bypassPermissions mode. already reports whether dir was trusted before
// (listed, or below a listed parent) with that consent if asked for; then
// the file is not changed.
func (t *Trust) Trust(dir string, allowBypass bool) (canon string, already bool, err error) {
	c, err := canonical(dir)
	if err != nil {
		return "", false, fmt.Errorf("trusting directory: %w", err)
	}
	err = t.update(func(l trustList) (trustList, bool) {
		trusted := slices.ContainsFunc(l.trusted, func(d string) bool { return within(c, d) })
		bypass := slices.ContainsFunc(l.bypass, func(d string) bool { return within(c, d) })
		if trusted && (bypass || !allowBypass) {
			already = true
			return l, false
		}
		if !trusted {
			l.trusted = append(l.trusted, c)
		}
		if allowBypass && !bypass {
			l.bypass = append(l.bypass, c)
		}
		return l, true
	})
	if err != nil {
		return "", false, fmt.Errorf("trusting directory %q: %w", c, err)
	}
	return c, already, nil
}

// Untrust removes dir from the list. removed is false when dir was not
// listed; by is a listed parent that still makes dir trusted ("" if none).
func (t *Trust) Untrust(dir string) (canon string, removed bool, by string, err error) {
	c, err := canonical(dir)
	if err != nil {
		return "", false, "", fmt.Errorf("untrusting directory: %w", err)
	}
	err = t.update(func(l trustList) (trustList, bool) {
		drop := func(d string) bool { return d == c }
		removed = slices.ContainsFunc(l.trusted, drop)
		l.trusted = slices.DeleteFunc(l.trusted, drop)
		l.bypass = slices.DeleteFunc(l.bypass, drop)
		return l, removed
	})
	if err != nil {
		return "", false, "", fmt.Errorf("untrusting directory %q: %w", c, err)
	}
	by, _ = t.TrustedBy(c)
	return c, removed, by, nil
}

// update changes the list under the file lock: f gets the current list and
// returns the new one and whether to write it.
func (t *Trust) update(f func(trustList) (trustList, bool)) error {
	if err := os.MkdirAll(filepath.Dir(t.path), 0o700); err != nil {
		return fmt.Errorf("creating %q: %w", filepath.Dir(t.path), err)
	}
	unlock, err := LockFile(t.path + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	cur, err := readTrust(t.path)
	if err != nil {
		return err
	}
	next, write := f(cur)
	if !write {
		return nil
	}
	b, err := json.MarshalIndent(trustFileJSON{Trusted: cleanDirs(next.trusted), AllowBypass: cleanDirs(next.bypass)}, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding trust file: %w", err)
	}
	if err := WriteFileAtomic(t.path, append(b, '\n'), 0o600); err != nil {
		return err
	}
	t.mu.Lock()
	t.loaded = false // re-read at the next call
	t.mu.Unlock()
	return nil
}

// LockFile takes an exclusive flock of path (created if needed) and returns
// the function that releases it. It blocks until the lock is free.
func LockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening lock file %q: %w", path, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %q: %w", path, err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing releases it anyway
		f.Close()
	}, nil
}

// WriteFileAtomic writes data to path through a temporary file in the same
// directory and a rename, so a reader sees the old or the new content,
// never a part. The file gets mode perm (an existing file keeps its mode).
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	if fi, err := os.Stat(path); err == nil {
		perm = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("writing %q: %w", path, err)
	}
	name := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(name)
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("writing %q: %w", path, err)
	}
	if err := tmp.Chmod(perm); err != nil {
		return fmt.Errorf("writing %q: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("writing %q: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %q: %w", path, err)
	}
	if err := os.Rename(name, path); err != nil {
		return fmt.Errorf("writing %q: %w", path, err)
	}
	ok = true
	return nil
}
