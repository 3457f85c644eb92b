package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// validMCPName is what a server name written by tackle may contain (as
// Claude Code's "mcp add").
var validMCPName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// mcpWriteFile returns the file tackle writes MCP servers of scope to
// (local when scope is "") and its mode for a new file.
func (l *Loader) mcpWriteFile(root, scope string) (string, fs.FileMode, error) {
	switch scope {
	case "", ScopeLocal, ScopeProject:
		if root == "" {
			return "", 0, fmt.Errorf("the project directory is empty")
		}
		abs, err := filepath.Abs(root)
		if err != nil {
			return "", 0, fmt.Errorf("resolving project directory %q: %w", root, err)
		}
		if scope == ScopeProject {
			return filepath.Join(abs, MCPProjectFile), 0o644, nil
		}
		return filepath.Join(abs, ".tackle", "settings.local.json"), 0o600, nil
	case ScopeUser:
		if l.opts.ConfigHome == "" {
			return "", 0, fmt.Errorf("the config home ($XDG_CONFIG_HOME) is not known")
		}
		return filepath.Join(l.opts.ConfigHome, "tackle", "settings.json"), 0o600, nil
	}
	return "", 0, fmt.Errorf("scope %q is not local, project or user", scope)
}

// AddMCPServer writes entry (a JSON object, validated as MCPServers does)
// under mcpServers.NAME in the file of scope: local (also "") →
// ROOT/.tackle/settings.local.json, project → ROOT/.mcp.json, user →
// CONFIGHOME/tackle/settings.json. An existing name in that file is an
// error unless replace. The write is atomic and locked; the file's other
// keys are kept in order; a file that is not valid JSON is left unchanged,
// with an error. It returns the file's path.
func (l *Loader) AddMCPServer(root, scope, name string, entry json.RawMessage, replace bool) (path string, err error) {
	if !validMCPName.MatchString(name) {
		return "", fmt.Errorf("adding MCP server %q: a name may contain only letters, digits, '-' and '_'", name)
	}
	if _, err := parseMCPEntry(name, entry, nil); err != nil {
		return "", fmt.Errorf("adding MCP server %q: %w", name, err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, entry); err != nil {
		return "", fmt.Errorf("adding MCP server %q: %w", name, err)
	}
	path, mode, err := l.mcpWriteFile(root, scope)
	if err != nil {
		return "", fmt.Errorf("adding MCP server %q: %w", name, err)
	}
	err = l.editJSONFile(path, mode, func(top *jsonObject) (bool, error) {
		servers, err := top.object("mcpServers")
		if err != nil {
			return false, err
		}
		if _, ok := servers.get(name); ok && !replace {
			return false, fmt.Errorf("%s already has a server named %q (replace it, or remove it first)", path, name)
		}
		servers.set(name, compact.Bytes())
		top.set("mcpServers", servers.encode())
		return true, nil
	})
	if err != nil {
		return "", fmt.Errorf("adding MCP server %q: %w", name, err)
	}
	return path, nil
}

// MCPEntryWarnings are the warnings of entry, an entry AddMCPServer took,
// as MCPServers gives them, but for the ${VAR}s the entry's sessions
// expand from their environment.
func MCPEntryWarnings(name string, entry json.RawMessage) []string {
	s, err := parseMCPEntry(name, entry, nil)
	if err != nil {
		return nil
	}
	return s.Warnings
}

// RemoveMCPServer removes NAME from the first of tackle's writable files
// that has it: local, project, user (scope "" searches all three in that
// order; otherwise only that scope's file). When only a Claude Code file
// (~/.claude.json) or the managed settings define it, the error says where
// and that tackle does not write it. It returns the file's path.
func (l *Loader) RemoveMCPServer(root, scope, name string) (path string, err error) {
	scopes := []string{scope}
	if scope == "" {
		scopes = []string{ScopeLocal, ScopeProject, ScopeUser}
	}
	var searched []string
	for _, sc := range scopes {
		p, mode, err := l.mcpWriteFile(root, sc)
		if err != nil {
			if scope == "" && root == "" && sc != ScopeUser {
				continue // no project: only the user file
			}
			return "", fmt.Errorf("removing MCP server %q: %w", name, err)
		}
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			searched = append(searched, p)
			continue
		}
		found := false
		err = l.editJSONFile(p, mode, func(top *jsonObject) (bool, error) {
			if _, ok := top.get("mcpServers"); !ok {
				return false, nil
			}
			servers, err := top.object("mcpServers")
			if err != nil {
				return false, err
			}
			if !servers.remove(name) {
				return false, nil
			}
			found = true
			top.set("mcpServers", servers.encode())
			return true, nil
		})
		if err != nil {
			return "", fmt.Errorf("removing MCP server %q: %w", name, err)
		}
		if found {
			return p, nil
		}
		searched = append(searched, p)
	}
	// Not in tackle's files: say where it is.
	abs := root
	if root != "" {
		if a, err := filepath.Abs(root); err == nil {
			abs = a
		}
	}
	if where := l.readOnlyMCPDefinition(abs, scope, name); where != "" {
		return "", fmt.Errorf("removing MCP server %q: it is defined in %s, which tackle does not write; remove it there", name, where)
	}
	return "", fmt.Errorf("removing MCP server %q: no such server in %s", name, strings.Join(searched, ", "))
}

// readOnlyMCPDefinition returns where name is defined in a file tackle
// does not write (~/.claude.json, managed settings) for scope, or "".
func (l *Loader) readOnlyMCPDefinition(root, scope, name string) string {
	has := func(raw json.RawMessage) bool {
		var m map[string]json.RawMessage
		_ = json.Unmarshal(raw, &m)
		_, ok := m[name]
		return ok
	}
	claude := join(l.opts.Home, ClaudeUserFile)
	if claude != "" {
		if data, err := readConfigFile(claude); err == nil {
			var top struct {
				MCPServers json.RawMessage            `json:"mcpServers"`
				Projects   map[string]json.RawMessage `json:"projects"`
			}
			if json.Unmarshal(data, &top) == nil {
				if (scope == "" || scope == ScopeLocal) && root != "" {
					keys := []string{root}
					if real, err := filepath.EvalSymlinks(root); err == nil && real != root {
						keys = append(keys, real)
					}
					for _, k := range keys {
						var p struct {
							MCPServers json.RawMessage `json:"mcpServers"`
						}
						if json.Unmarshal(top.Projects[k], &p) == nil && has(p.MCPServers) {
							return fmt.Sprintf("Claude Code's %s (projects[%q], local scope: `claude mcp remove %s -s local`)", claude, k, name)
						}
					}
				}
				if (scope == "" || scope == ScopeUser) && has(top.MCPServers) {
					return fmt.Sprintf("Claude Code's %s (user scope: `claude mcp remove %s -s user`)", claude, name)
				}
			}
		}
	}
	if scope == "" || scope == ScopeManaged {
		if data, err := readConfigFile(l.opts.ManagedPath); err == nil {
			var top struct {
				MCPServers json.RawMessage `json:"mcpServers"`
			}
			if json.Unmarshal(data, &top) == nil && has(top.MCPServers) {
				return "the managed settings " + l.opts.ManagedPath
			}
		}
	}
	return ""
}

// ApproveMCPServers records the approval of project (.mcp.json) servers in
// ROOT/.tackle/settings.local.json: names are appended to
// enabledMcpjsonServers (and removed from that file's
// disabledMcpjsonServers), or, with all, enableAllProjectMcpServers is set
// to true. A name disabled in another file stays disabled (a disable
// anywhere wins); approval counts only in a trusted workspace. It returns
// the file's path.
func (l *Loader) ApproveMCPServers(root string, names []string, all bool) (path string, err error) {
	if len(names) == 0 && !all {
		return "", errors.New("approving MCP servers: no server named (give names, or all)")
	}
	for _, n := range names {
		if n == "" {
			return "", errors.New("approving MCP servers: a server name is empty")
		}
	}
	path, mode, err := l.mcpWriteFile(root, ScopeLocal)
	if err != nil {
		return "", fmt.Errorf("approving MCP servers: %w", err)
	}
	err = l.editJSONFile(path, mode, func(top *jsonObject) (bool, error) {
		changed := false
		if all {
			if v, ok := top.get("enableAllProjectMcpServers"); !ok || string(bytes.TrimSpace(v)) != "true" {
				top.set("enableAllProjectMcpServers", json.RawMessage("true"))
				changed = true
			}
		}
		if len(names) == 0 {
			return changed, nil
		}
		enabled, err := top.strings("enabledMcpjsonServers")
		if err != nil {
			return false, err
		}
		disabled, err := top.strings("disabledMcpjsonServers")
		if err != nil {
			return false, err
		}
		for _, n := range names {
			if !slices.Contains(enabled, n) {
				enabled = append(enabled, n)
				changed = true
			}
			if i := slices.Index(disabled, n); i >= 0 {
				disabled = slices.Delete(disabled, i, i+1)
				changed = true
			}
		}
		if !changed {
			return false, nil
		}
		b, _ := json.Marshal(enabled)
		top.set("enabledMcpjsonServers", b)
		if _, ok := top.get("disabledMcpjsonServers"); ok {
			if disabled == nil {
				disabled = []string{}
			}
			b, _ := json.Marshal(disabled)
			top.set("disabledMcpjsonServers", b)
		}
		return true, nil
	})
	if err != nil {
		return "", fmt.Errorf("approving MCP servers: %w", err)
	}
	return path, nil
}

// editJSONFile changes the JSON object in path under an flock of
// "<path>.lock": edit gets the current object (empty when the file is
// missing or blank) and says whether to write it back. The write is atomic
// (WriteFileAtomic, mode for a new file); the directory is created if
// needed. A file that is not a JSON object is left unchanged, with an
// error. A symlink is followed, but a Claude Code file is never written.
func (l *Loader) editJSONFile(path string, mode fs.FileMode, edit func(top *jsonObject) (bool, error)) error {
	dirMode := fs.FileMode(0o755)
	if mode&0o077 == 0 {
		dirMode = 0o700
	}
	if err := os.MkdirAll(filepath.Dir(path), dirMode); err != nil {
		return fmt.Errorf("creating %q: %w", filepath.Dir(path), err)
	}
	// Best effort: the file is written whether or not git can be told to
	// ignore it.
	_ = KeepOutOfGit(path)
	unlock, err := LockFile(path + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	target := path
	if t, err := filepath.EvalSymlinks(path); err == nil {
		target = t
	}
	if filepath.Base(target) == ClaudeUserFile || strings.Contains(filepath.ToSlash(target), "/.claude/") {
		return fmt.Errorf("%q resolves to Claude Code's file %q, which tackle does not write", path, target)
	}
	data, err := readConfigFile(target)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading %q: %w", target, err)
	}
	top := &jsonObject{}
	if len(bytes.TrimSpace(data)) > 0 {
		if top, err = decodeObject(data); err != nil {
			if p := problemOf(target, data, err); p.Line > 0 {
				return fmt.Errorf("%s (fix it first: it was left unchanged)", strings.Replace(p.Error(), "settings must be", "the file must be", 1))
			}
			return fmt.Errorf("%s: %v (fix it first: it was left unchanged)", target, err)
		}
	}
	write, err := edit(top)
	if err != nil || !write {
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, top.encode(), "", "  "); err != nil {
		return fmt.Errorf("encoding %q: %w", target, err)
	}
	out.WriteByte('\n')
	if err := WriteFileAtomic(target, out.Bytes(), mode); err != nil {
		return err
	}
	// Re-read at the next look, whatever the file system's time resolution.
	l.mu.Lock()
	for _, p := range []string{path, target} {
		if e := l.files[p]; e != nil {
			e.fresh = false
		}
	}
	l.mu.Unlock()
	return nil
}

// jsonObject is a JSON object that keeps its keys in order, so rewriting a
// file moves nothing the user wrote.
type jsonObject struct {
	keys []string
	vals []json.RawMessage
}

// decodeObject decodes data, which must be one JSON object. Errors are
// encoding/json's (*json.SyntaxError, *json.UnmarshalTypeError) so that
// problemOf can place them.
func decodeObject(data []byte) (*jsonObject, error) {
	var check map[string]json.RawMessage
	if err := json.Unmarshal(data, &check); err != nil {
		return nil, err
	}
	if check == nil {
		return &jsonObject{}, nil // null
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // '{'
		return nil, err
	}
	o := &jsonObject{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		o.set(t.(string), v) // a repeated key: the last wins, as in encoding/json
	}
	return o, nil
}

func (o *jsonObject) get(key string) (json.RawMessage, bool) {
	if i := slices.Index(o.keys, key); i >= 0 {
		return o.vals[i], true
	}
	return nil, false
}

func (o *jsonObject) set(key string, v json.RawMessage) {
	if i := slices.Index(o.keys, key); i >= 0 {
		o.vals[i] = v
		return
	}
	o.keys = append(o.keys, key)
	o.vals = append(o.vals, v)
}

func (o *jsonObject) remove(key string) bool {
	i := slices.Index(o.keys, key)
	if i < 0 {
		return false
	}
	o.keys = slices.Delete(o.keys, i, i+1)
	o.vals = slices.Delete(o.vals, i, i+1)
	return true
}

// object returns the object under key (empty when missing or null).
func (o *jsonObject) object(key string) (*jsonObject, error) {
	v, ok := o.get(key)
	if !ok || string(bytes.TrimSpace(v)) == "null" {
		return &jsonObject{}, nil
	}
	sub, err := decodeObject(v)
	if err != nil || bytes.TrimSpace(v)[0] != '{' {
		return nil, fmt.Errorf("%q is not a JSON object (the file was left unchanged)", key)
	}
	return sub, nil
}

// strings returns the list of strings under key (nil when missing or null).
func (o *jsonObject) strings(key string) ([]string, error) {
	v, ok := o.get(key)
	if !ok {
		return nil, nil
	}
	var out []string
	if err := json.Unmarshal(v, &out); err != nil {
		return nil, fmt.Errorf("%q is not a list of strings (the file was left unchanged)", key)
	}
	return out, nil
}

func (o *jsonObject) encode() []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(o.vals[i])
	}
	b.WriteByte('}')
	return b.Bytes()
}
