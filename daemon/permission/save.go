package permission

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"github.com/tackle-agent/tackle/daemon/config"
	"github.com/tackle-agent/tackle/internal/safefile"
)

// SettingsFile returns the file an "always" rule of scope goes to:
// project → <projectRoot>/.tackle/settings.local.json, user →
// <configHome>/tackle/settings.json. Claude Code's files are never written.
func SettingsFile(scope, projectRoot, configHome string) (string, error) {
	switch scope {
	case config.ScopeProject, config.ScopeLocal:
		if projectRoot == "" || !filepath.IsAbs(projectRoot) {
			return "", fmt.Errorf("saving a %s rule: the project root %q is not an absolute path", scope, projectRoot)
		}
		return filepath.Join(projectRoot, ".tackle", "settings.local.json"), nil
	case config.ScopeUser:
		if configHome == "" || !filepath.IsAbs(configHome) {
			return "", fmt.Errorf("saving a user rule: the config home %q is not an absolute path", configHome)
		}
		return filepath.Join(configHome, "tackle", "settings.json"), nil
	}
	return "", fmt.Errorf("saving a rule: scope %q is not project or user (session rules are kept by the daemon)", scope)
}

// ruleListSep finds the ", " between the rules of a Decision.AlwaysRule list.
var ruleListSep = regexp.MustCompile(`\), ([A-Za-z][A-Za-z0-9_-]*(\(|$|, ))`)

// SplitRuleList splits a Decision.AlwaysRule list ("Bash(a *), Bash(b *)")
// into its rules. A single rule comes back alone.
func SplitRuleList(s string) []string {
	var out []string
	for {
		loc := ruleListSep.FindStringSubmatchIndex(s)
		if loc == nil {
			break
		}
		out = append(out, s[:loc[0]+1])
		s = s[loc[2]:]
	}
	return append(out, s)
}

// SaveRule adds an allow rule ("allow always") to the settings file of scope
// (see SettingsFile) and returns the file's path. rule may also be a
// Decision.AlwaysRule list of several rules. It is SaveRules of one rule.
func SaveRule(scope, rule, projectRoot, configHome string) (path string, err error) {
	return SaveRules(scope, SplitRuleList(rule), projectRoot, configHome)
}

// SaveRules adds allow rules to the settings file of scope and returns its
// path. Every rule must parse. It creates the file and its directory when
// missing, keeps every other key of the file (in order) and the rules
// already there, adds no duplicate, and writes atomically (temporary file,
// fsync, rename) while holding an exclusive flock on "<file>.lock", so
// concurrent savers (goroutines or processes) lose nothing. A file that is
// not valid JSON is left as it is, with an error.
func SaveRules(scope string, rules []string, projectRoot, configHome string) (path string, err error) {
	path, err = SettingsFile(scope, projectRoot, configHome)
	if err != nil {
		return "", err
	}
	for _, r := range rules {
		if _, err := ParseRule(r); err != nil {
			return "", fmt.Errorf("saving rule %q: %w", r, err)
		}
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating %q: %w", dir, err)
	}
	// Best effort: the rules are saved whether or not git can be told to
	// ignore the file.
	_ = config.KeepOutOfGit(path)
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", fmt.Errorf("opening lock file: %w", err)
	}
	defer lock.Close()
	for {
		err = syscall.Flock(int(lock.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		return "", fmt.Errorf("locking %q: %w", path+".lock", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing unlocks too

	target := path
	if t, err := filepath.EvalSymlinks(path); err == nil {
		target = t
	}
	if isClaudeFile(target) {
		return "", fmt.Errorf("saving a rule: %q resolves to Claude Code's file %q, which tackle does not write", path, target)
	}
	data, err := safefile.Read(target, safefile.LimitSettings)
	mode := fs.FileMode(0o600)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		data = nil
	case err != nil:
		return "", fmt.Errorf("reading %q: %w", target, err)
	default:
		if fi, err := os.Stat(target); err == nil {
			mode = fi.Mode().Perm()
		}
	}
	out, changed, err := addAllowRules(data, rules)
	if err != nil {
		return "", fmt.Errorf("adding rules to %q: %w", target, err)
	}
	if !changed {
		return path, nil
	}
	if err := writeAtomic(target, out, mode); err != nil {
		return "", err
	}
	return path, nil
}

// member is one key of a JSON object, in file order.
type member struct {
	key string
	val json.RawMessage
}

// objectMembers decodes a JSON object keeping the order of its keys.
func objectMembers(data []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if t != json.Delim('{') {
		return nil, fmt.Errorf("expected a JSON object, found %v", t)
	}
	var ms []member
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		ms = append(ms, member{key: k.(string), val: v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("unexpected data after the JSON object")
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("unexpected data after the JSON object")
	}
	return ms, nil
}

func encodeMembers(ms []member) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.val)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// addAllowRules returns data with rules added to permissions.allow.
func addAllowRules(data []byte, rules []string) ([]byte, bool, error) {
	var top []member
	if len(bytes.TrimSpace(data)) > 0 {
		if !json.Valid(data) {
			return nil, false, errors.New("the file is not valid JSON; fix it first (it was left unchanged)")
		}
		var err error
		if top, err = objectMembers(data); err != nil {
			return nil, false, fmt.Errorf("the file is not a JSON object (it was left unchanged): %w", err)
		}
	}
	pi := -1
	for i, m := range top {
		if m.key == "permissions" {
			pi = i // the last one wins, as in encoding/json
		}
	}
	var perms []member
	if pi >= 0 && string(bytes.TrimSpace(top[pi].val)) != "null" {
		var err error
		if perms, err = objectMembers(top[pi].val); err != nil {
			return nil, false, fmt.Errorf("permissions is not a JSON object (the file was left unchanged): %w", err)
		}
	}
	ai := -1
	for i, m := range perms {
		if m.key == "allow" {
			ai = i
		}
	}
	var allow []string
	if ai >= 0 && string(bytes.TrimSpace(perms[ai].val)) != "null" {
		if err := json.Unmarshal(perms[ai].val, &allow); err != nil {
			return nil, false, fmt.Errorf("permissions.allow is not a list of strings (the file was left unchanged): %w", err)
		}
	}
	changed := false
	for _, r := range rules {
		dup := false
		for _, a := range allow {
			if a == r {
				dup = true
				break
			}
		}
		if !dup {
			allow = append(allow, r)
			changed = true
		}
	}
	if !changed {
		return data, false, nil
	}
	enc, err := json.Marshal(allow)
	if err != nil {
		return nil, false, err
	}
	if ai >= 0 {
		perms[ai].val = enc
	} else {
		perms = append(perms, member{key: "allow", val: enc})
	}
	if pi >= 0 {
		top[pi].val = encodeMembers(perms)
	} else {
		top = append(top, member{key: "permissions", val: encodeMembers(perms)})
	}
	var out bytes.Buffer
	if err := json.Indent(&out, encodeMembers(top), "", "  "); err != nil {
		return nil, false, err
	}
	out.WriteByte('\n')
	return out.Bytes(), true, nil
}

// writeAtomic replaces path with data: a temporary file in the same
// directory, fsynced, renamed over path, and the directory fsynced.
func writeAtomic(path string, data []byte, mode fs.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("creating a temporary file in %q: %w", dir, err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("writing %q: %w", tmp, err)
	}
	if err := f.Chmod(mode); err != nil {
		return fmt.Errorf("setting the mode of %q: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("syncing %q: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("closing %q: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("renaming %q to %q: %w", tmp, path, err)
	}
	ok = true
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// isClaudeFile reports whether path is one of Claude Code's files, which
// tackle never writes.
func isClaudeFile(path string) bool {
	return filepath.Base(path) == ".claude.json" || strings.Contains(filepath.ToSlash(path), "/.claude/")
}
