package config

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// This file reads two settings that apply to the session as a whole: the
// variables of "env" and the directories of
// permissions.additionalDirectories. Both widen what tackle does, so an
// untrusted project's files contribute neither (trustkeys.go drops them
// from the layers these functions read).

// Env returns the variables of the "env" objects of the settings files
// that apply, merged variable by variable: a higher file's value wins (as
// Claude Code merges them). String values are kept as written; numbers
// and booleans as their JSON text (Claude Code turns them into strings
// too). Anything else, an "env" that is not an object, and a name that
// is empty or holds '=' or NUL are left out. A nil s, or no variable,
// gives nil.
//
// The map is the caller's: Env computes it at every call.
func (s *Settings) Env() map[string]string {
	if s == nil {
		return nil
	}
	var out map[string]string
	for _, ly := range s.Layers {
		raw, ok := ly.Raw["env"]
		if !ok {
			continue
		}
		var vars map[string]json.RawMessage
		if json.Unmarshal(raw, &vars) != nil {
			continue
		}
		for k, v := range vars {
			val, ok := envValue(v)
			if !ok || k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(val, 0) {
				continue
			}
			if out == nil {
				out = map[string]string{}
			}
			out[k] = val
		}
	}
	return out
}

// envValue is the text of an env value: a string, a number or a boolean.
func envValue(v json.RawMessage) (string, bool) {
	var str string
	if json.Unmarshal(v, &str) == nil {
		return str, true
	}
	var num json.Number
	if json.Unmarshal(v, &num) == nil {
		return num.String(), true
	}
	var b bool
	if json.Unmarshal(v, &b) == nil {
		return strconv.FormatBool(b), true
	}
	return "", false
}

// Environ returns environ (KEY=VALUE entries) with Env applied: each
// variable the settings set replaces every entry of that name, and is
// appended, sorted by name. environ itself is not modified. A nil s, or
// no settings variable, returns environ as is.
func (s *Settings) Environ(environ []string) []string {
	env := s.Env()
	if len(env) == 0 {
		return environ
	}
	out := make([]string, 0, len(environ)+len(env))
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if _, set := env[k]; !set {
			out = append(out, kv)
		}
	}
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		out = append(out, k+"="+env[k])
	}
	return out
}

// AdditionalDirectories returns the permissions.additionalDirectories of
// the settings files that apply, absolute and clean, once each, lowest
// precedence first (see AdditionalDirectory for how an entry resolves).
// root is the session's directory, which relative entries of user and
// managed files resolve against ("": the directory the settings were
// loaded for). Entries that cannot be resolved are left out;
// permission.LoadRules reports them.
func (s *Settings) AdditionalDirectories(root string) []string {
	if s == nil {
		return nil
	}
	if root == "" {
		root = s.root
	}
	var out []string
	seen := map[string]bool{}
	for _, ly := range s.Layers {
		raw, ok := ly.Raw["permissions"]
		if !ok {
			continue
		}
		var p struct {
			AdditionalDirectories []string `json:"additionalDirectories"`
		}
		if json.Unmarshal(raw, &p) != nil {
			continue
		}
		for _, d := range p.AdditionalDirectories {
			if abs := AdditionalDirectory(d, ly.Source, root, s.home); abs != "" && !seen[abs] {
				seen[abs] = true
				out = append(out, abs)
			}
		}
	}
	return out
}

// AdditionalDirectory resolves the permissions.additionalDirectories entry
// d of the settings file src: "~" and "~/x" against home; an absolute path
// as it is (cleaned); a relative one against the file's project (the
// directory above its .claude or .tackle) for project and local files,
// and against root (the session's directory, as Claude Code resolves a
// relative entry of the user's settings against its working directory)
// for user and managed files. The symlinks of a directory that exists are
// resolved (as tool.Env's WorkingDirs are). It returns "" when d cannot be
// resolved: empty, ~user, or relative with no directory to resolve it
// against.
func AdditionalDirectory(d string, src Source, root, home string) string {
	var p string
	switch {
	case d == "":
		return ""
	case d == "~" || strings.HasPrefix(d, "~/"):
		if home == "" {
			return ""
		}
		p = filepath.Join(home, d[1:])
	case strings.HasPrefix(d, "~"):
		return ""
	case filepath.IsAbs(d):
		p = filepath.Clean(d)
	default:
		base := root
		if workspaceFile(src.Scope) && src.Path != "" {
			base = filepath.Dir(filepath.Dir(src.Path))
		}
		if base == "" || !filepath.IsAbs(base) {
			return ""
		}
		p = filepath.Join(base, d)
	}
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	return p
}
