package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ScopeSession is the scope of MCP servers from --mcp-config files given
// when a session is created; they win over every other source.
const ScopeSession = "session"

// MCP server states set by configuration (the connection manager adds its
// own).
const (
	// MCPNeedsApproval: a project (.mcp.json) server that is not approved.
	MCPNeedsApproval = "needs-approval"
	// MCPNeedsTrust: a server from the workspace's files (.mcp.json,
	// .tackle/settings.local.json) while the workspace is not trusted,
	// approved or not.
	MCPNeedsTrust = "needs-trust"
	// MCPDisabled: listed in disabledMcpjsonServers somewhere.
	MCPDisabled = "disabled"
)

// MCP configuration file names.
const (
	// MCPProjectFile is the project's shared MCP file, at the project root.
	MCPProjectFile = ".mcp.json"
	// ClaudeUserFile is Claude Code's user file in the home directory
	// (mcpServers at the top: user scope; projects[DIR].mcpServers: local scope).
	ClaudeUserFile = ".claude.json"
)

// MCPServer is one configured server after precedence and ${VAR} expansion.
type MCPServer struct {
	// Name is the server's name as configured.
	Name string
	// Scope is ScopeLocal, ScopeProject, ScopeUser, ScopeManaged,
	// ScopeSession or ScopePlugin.
	Scope string
	// Source is the file it came from; for Claude Code's local scope
	// "/home/u/.claude.json [projects./path]", for an inline --mcp-config
	// "--mcp-config".
	Source string
	// Type is "stdio", "http" or "sse" ("streamable-http" is normalised to "http").
	Type    string
	Command string
	Args    []string
	Env     map[string]string
	URL     string
	Headers map[string]string
	// Timeout is the per-call timeout from "timeout" (ms); 0 means the default.
	Timeout time.Duration
	// AlwaysLoad keeps the server's tools out of tool search (never deferred).
	AlwaysLoad bool
	// Dir is the project directory for project, local and session scope
	// ("" for user and managed).
	Dir string
	// State is "" (may start), MCPNeedsTrust, MCPNeedsApproval or
	// MCPDisabled.
	State string
	// Warnings are non-fatal remarks, e.g. "${TOKEN} is not set (left as is)".
	Warnings []string
	// StartupTimeout bounds start and initialize (0: the connection
	// manager's default). The caller sets it from MCPSettings; it is not
	// part of the digest.
	StartupTimeout time.Duration
	// OAuth is the entry's "oauth" block (http and sse servers), nil when
	// absent: tackle authorises with OAuth whenever a server asks for it.
	OAuth *MCPOAuth
}

// MCPOAuth is a server entry's "oauth" block: Claude Code's keys
// (clientId, callbackPort, scopes) and tackle's (clientSecret,
// clientMetadataUrl). Values expand ${VAR} like the rest of the entry.
type MCPOAuth struct {
	// ClientID is a client registered with the authorisation server
	// beforehand; without it tackle uses ClientMetadataURL, then dynamic
	// client registration.
	ClientID     string `json:"clientId,omitempty"`
	ClientSecret string `json:"clientSecret,omitempty"`
	// CallbackPort fixes the loopback redirect URI's port
	// (http://localhost:PORT/callback); 0 picks a free one.
	CallbackPort int `json:"callbackPort,omitempty"`
	// Scopes, space-separated, replace the discovered scopes.
	Scopes string `json:"scopes,omitempty"`
	// ClientMetadataURL is an https URL of a client ID metadata document
	// that names tackle's redirect URIs.
	ClientMetadataURL string `json:"clientMetadataUrl,omitempty"`
}

// Digest is a hex sha256 over Name, Type, Command, Args, Env, URL, Headers,
// Dir and OAuth: the key of a shared connection. A nil and an empty list or map
// digest the same.
func (s *MCPServer) Digest() string {
	nz := func(m map[string]string) map[string]string {
		if m == nil {
			return map[string]string{}
		}
		return m
	}
	args := s.Args
	if args == nil {
		args = []string{}
	}
	// encoding/json sorts map keys: the encoding is canonical.
	b, err := json.Marshal(struct {
		Name, Type, Command string
		Args                []string
		Env                 map[string]string
		URL                 string
		Headers             map[string]string
		Dir                 string
		OAuth               *MCPOAuth `json:",omitempty"`
	}{s.Name, s.Type, s.Command, args, nz(s.Env), s.URL, nz(s.Headers), s.Dir, s.OAuth})
	if err != nil { // strings only: cannot happen
		panic(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// MCPProblem is a broken file or a broken server entry. It never stops the
// other servers.
type MCPProblem struct {
	Path string
	// Line and Column locate a JSON error in Path (0 when not known).
	Line, Column int
	// Server is the entry's name ("" for a problem of the whole file).
	Server  string
	Message string
}

// Error returns "path[:line:col]: [server NAME: ]message".
func (p MCPProblem) Error() string {
	var b strings.Builder
	b.WriteString(p.Path)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", p.Line, p.Column)
	}
	b.WriteString(": ")
	if p.Server != "" {
		fmt.Fprintf(&b, "server %s: ", p.Server)
	}
	b.WriteString(p.Message)
	return b.String()
}

// mcpSource is one place server entries come from, in precedence order.
type mcpSource struct {
	scope  string
	source string // MCPServer.Source
	path   string // the file, for problems
	// servers is the "mcpServers" value (nil: none).
	servers json.RawMessage
	// needsTrust: the file lives in the workspace, so its servers may start
	// only when the workspace is trusted.
	needsTrust bool
}

// MCPServers returns the servers a session rooted at root uses, sorted by
// name, and the problems of broken files and entries (those are skipped;
// a broken file whose last good version is known keeps it in force, as
// settings files do).
//
// environ is the session's environment for ${VAR} expansion (later entries
// win), with the settings' "env" applied over it (Settings.Environ). extra
// are --mcp-config files (or inline JSON objects): scope "session",
// highest precedence, a later one winning over an earlier one. trusted
// says whether root is a trusted workspace.
//
// Precedence, the whole entry coming from the highest source that names the
// server: session > local (.tackle/settings.local.json, then ~/.claude.json
// projects[root]) > project (.mcp.json) > user ($XDG_CONFIG_HOME/tackle/
// settings.json, then ~/.claude.json) > managed > plugin (the servers of
// the plugins the settings turn on, "plugin:<plugin>:<server>": see
// pluginMCPServers). A broken entry shadows the lower ones (it is
// reported, not replaced).
//
// .mcp.json servers need approval (see ApproveMCPServers); servers from the
// workspace's files (.mcp.json, .tackle/settings.local.json) need a trusted
// workspace. The files read are watched by Run like settings files.
func (l *Loader) MCPServers(root string, environ []string, extra []string, trusted bool) ([]MCPServer, []MCPProblem) {
	if root != "" {
		if abs, err := filepath.Abs(root); err == nil {
			root = abs
		}
	}
	st, _ := l.Load(root)
	var problems []MCPProblem

	// Read the MCP files through the cache.
	var (
		localPath   = join(root, ".tackle", "settings.local.json")
		projectPath = join(root, MCPProjectFile)
		userPath    = join(l.opts.ConfigHome, "tackle", "settings.json")
		claudePath  = join(l.opts.Home, ClaudeUserFile)
		managedPath = l.opts.ManagedPath
	)
	raws := map[string]map[string]json.RawMessage{}
	l.mu.Lock()
	newDirs := false
	for _, f := range []struct {
		path    string
		rawOnly bool
	}{{localPath, false}, {projectPath, true}, {userPath, false}, {claudePath, true}, {managedPath, false}} {
		if f.path == "" {
			continue
		}
		newDirs = l.watchDirLocked(f.path) || newDirs
		e := l.files[f.path]
		if e == nil {
			e = &fileEntry{rawOnly: f.rawOnly}
			l.files[f.path] = e
		}
		l.refreshLocked(f.path)
		if e.problem != nil {
			problems = append(problems, MCPProblem{Path: e.problem.Path, Line: e.problem.Line, Column: e.problem.Column, Message: e.problem.Message})
		}
		if e.good != nil && !e.empty {
			raws[f.path] = e.good.raw
		}
	}
	// Servers in a settings file no tool reads them from (Load refreshed
	// those files).
	for _, src := range l.sourcesLocked(root).srcs {
		e := l.files[src.Path]
		if e == nil || e.good == nil || e.empty || l.readsMCPServers(src.Path, root) {
			continue
		}
		if v, ok := e.good.raw["mcpServers"]; ok {
			problems = append(problems, MCPProblem{Path: src.Path, Message: strayMCPMessage(v)})
		}
	}
	addReq, done := l.addReq, l.done
	l.mu.Unlock()
	if newDirs {
		syncWatch(addReq, done)
	}

	// A .mcp.json configures servers under "mcpServers" only.
	if raw, ok := raws[projectPath]; ok {
		if _, has := raw["mcpServers"]; !has {
			problems = append(problems, MCPProblem{Path: projectPath, Message: noServersMessage(raw)})
		}
	}

	// Claude Code's per-project entry in ~/.claude.json.
	var ccProject struct {
		key       string
		servers   json.RawMessage
		enabled   []string
		disabled  []string
		enableAll *bool
	}
	if raw, ok := raws[claudePath]["projects"]; ok && root != "" {
		var projects map[string]json.RawMessage
		if err := json.Unmarshal(raw, &projects); err != nil {
			problems = append(problems, MCPProblem{Path: claudePath, Message: `"projects" is not an object (its servers are ignored)`})
		}
		keys := []string{root}
		if real, err := filepath.EvalSymlinks(root); err == nil && real != root {
			keys = append(keys, real)
		}
		for _, k := range keys {
			p, ok := projects[k]
			if !ok {
				continue
			}
			ccProject.key = k
			var m map[string]json.RawMessage
			if err := json.Unmarshal(p, &m); err != nil {
				problems = append(problems, MCPProblem{Path: claudePath, Message: fmt.Sprintf("projects[%q] is not an object (its servers are ignored)", k)})
				break
			}
			ccProject.servers = m["mcpServers"]
			ccProject.enabled = stringList(m, "enabledMcpjsonServers", claudePath, &problems)
			ccProject.disabled = stringList(m, "disabledMcpjsonServers", claudePath, &problems)
			if b, ok := m["enableAllProjectMcpServers"]; ok {
				var v bool
				if json.Unmarshal(b, &v) == nil {
					ccProject.enableAll = &v
				}
			}
			break
		}
	}

	// The sources, highest precedence first.
	var srcs []mcpSource
	for i := len(extra) - 1; i >= 0; i-- {
		if s, ok := readSessionMCP(extra[i], &problems); ok {
			srcs = append(srcs, s)
		}
	}
	srcs = append(srcs,
		mcpSource{scope: ScopeLocal, source: localPath, path: localPath, servers: raws[localPath]["mcpServers"], needsTrust: true},
	)
	if ccProject.servers != nil {
		srcs = append(srcs, mcpSource{scope: ScopeLocal, source: fmt.Sprintf("%s [projects.%s]", claudePath, ccProject.key), path: claudePath, servers: ccProject.servers})
	}
	srcs = append(srcs,
		mcpSource{scope: ScopeProject, source: projectPath, path: projectPath, servers: raws[projectPath]["mcpServers"], needsTrust: true},
		mcpSource{scope: ScopeUser, source: userPath, path: userPath, servers: raws[userPath]["mcpServers"]},
		mcpSource{scope: ScopeUser, source: claudePath, path: claudePath, servers: raws[claudePath]["mcpServers"]},
		mcpSource{scope: ScopeManaged, source: managedPath, path: managedPath, servers: raws[managedPath]["mcpServers"]},
	)

	// Approvals of project servers.
	enabled, disabled := map[string]bool{}, map[string]bool{}
	var enableAll *bool
	if st != nil {
		for _, ly := range st.Layers {
			for _, n := range stringList(ly.Raw, "enabledMcpjsonServers", ly.Source.Path, &problems) {
				enabled[n] = true
			}
			for _, n := range stringList(ly.Raw, "disabledMcpjsonServers", ly.Source.Path, &problems) {
				disabled[n] = true
			}
			if b, ok := ly.Raw["enableAllProjectMcpServers"]; ok {
				var v bool
				if err := json.Unmarshal(b, &v); err != nil {
					problems = append(problems, MCPProblem{Path: ly.Source.Path, Message: `"enableAllProjectMcpServers" must be true or false`})
				} else {
					enableAll = &v
				}
			}
		}
	}
	for _, n := range ccProject.enabled {
		enabled[n] = true
	}
	for _, n := range ccProject.disabled {
		disabled[n] = true
	}
	if enableAll == nil {
		enableAll = ccProject.enableAll
	}

	// The settings' env applies over the session's environment, as it does
	// for commands (Settings.Environ): ${VAR} may name a variable it sets.
	env := environMap(st.Environ(environ))
	taken := map[string]bool{}
	var out []MCPServer
	for _, src := range srcs {
		if len(src.servers) == 0 || string(bytes.TrimSpace(src.servers)) == "null" {
			continue
		}
		var entries map[string]json.RawMessage
		if err := json.Unmarshal(src.servers, &entries); err != nil {
			problems = append(problems, MCPProblem{Path: src.path, Message: fmt.Sprintf(`"mcpServers" must be an object mapping server names to entries, found %s`, jsonKind(src.servers))})
			continue
		}
		names := make([]string, 0, len(entries))
		for n := range entries {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, name := range names {
			if taken[name] {
				continue
			}
			taken[name] = true
			s, err := parseMCPEntry(name, entries[name], env)
			if err != nil {
				problems = append(problems, MCPProblem{Path: src.path, Server: name, Message: err.Error()})
				continue
			}
			s.Scope, s.Source = src.scope, src.source
			if src.scope == ScopeProject || src.scope == ScopeLocal || src.scope == ScopeSession {
				s.Dir = root
			}
			switch {
			case src.scope == ScopeProject && disabled[name]:
				s.State = MCPDisabled
			case src.needsTrust && !trusted:
				s.State = MCPNeedsTrust
				s.Warnings = append(s.Warnings, "the workspace "+root+" is not trusted: servers from its files do not start (`tackle trust`)")
			case src.scope == ScopeProject && !(enableAll != nil && *enableAll) && !enabled[name]:
				s.State = MCPNeedsApproval
			}
			out = append(out, *s)
		}
	}
	out = append(out, pluginMCPServers(st, env, taken, &problems)...)
	slices.SortFunc(out, func(a, b MCPServer) int { return strings.Compare(a.Name, b.Name) })
	return out, problems
}

// pluginMCPServers are the MCP servers of the plugins the settings st
// turn on (Settings.Plugins), named "plugin:<plugin>:<server>" as Claude
// Code names them (their tools are mcp__plugin_<plugin>_<server>__<tool>),
// scope "plugin", below every other source (a name taken there wins). A
// plugin's .mcp.json comes first, then its manifest's mcpServers; a later
// entry of a name wins. ${CLAUDE_PLUGIN_ROOT} and ${CLAUDE_PLUGIN_DATA}
// are replaced first, then ${VAR} from env; a stdio server also gets
// both in its environment (its own env entries win), and the data
// directory is made for a stdio server and for an entry that names it. The problems of the
// plugins' MCP files are added to problems.
func pluginMCPServers(st *Settings, env map[string]string, taken map[string]bool, problems *[]MCPProblem) []MCPServer {
	plugins, probs := st.Plugins()
	for _, p := range probs {
		if p.Part == PartMCP {
			*problems = append(*problems, MCPProblem{Path: p.Path, Message: "plugin " + p.Plugin + ": " + p.Message})
		}
	}
	var out []MCPServer
	for i := range plugins {
		p := &plugins[i]
		type entry struct {
			raw  json.RawMessage
			path string
		}
		entries := map[string]entry{}
		for _, f := range p.MCPServers {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(f.Raw, &m); err != nil {
				*problems = append(*problems, MCPProblem{Path: f.Path, Message: fmt.Sprintf("plugin %s: the MCP servers must be an object mapping server names to entries, found %s", p.Label(), jsonKind(f.Raw))})
				continue
			}
			for name, raw := range m {
				entries[name] = entry{raw, f.Path}
			}
		}
		vars := strings.NewReplacer("${CLAUDE_PLUGIN_ROOT}", jsonText(p.Dir), "${CLAUDE_PLUGIN_DATA}", jsonText(p.DataDir))
		for _, name := range slices.Sorted(maps.Keys(entries)) {
			e := entries[name]
			full := "plugin:" + p.Name + ":" + name
			if taken[full] {
				continue
			}
			taken[full] = true
			s, err := parseMCPEntry(full, json.RawMessage(vars.Replace(string(e.raw))), env)
			if err != nil {
				*problems = append(*problems, MCPProblem{Path: e.path, Server: full, Message: err.Error()})
				continue
			}
			s.Scope, s.Source = ScopePlugin, e.path+" [plugin "+p.Label()+"]"
			if p.DataDir != "" && (s.Type == "stdio" || bytes.Contains(e.raw, []byte("CLAUDE_PLUGIN_DATA"))) {
				// Claude Code makes the data directory for the servers it
				// is given to; a failure shows when the server uses it.
				_ = os.MkdirAll(p.DataDir, 0o755)
			}
			if s.Type == "stdio" {
				penv := map[string]string{"CLAUDE_PLUGIN_ROOT": p.Dir}
				if p.DataDir != "" {
					penv["CLAUDE_PLUGIN_DATA"] = p.DataDir
				}
				maps.Copy(penv, s.Env)
				s.Env = penv
			}
			out = append(out, *s)
		}
	}
	return out
}

// jsonText is s as it is written inside a JSON string.
func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// readSessionMCP reads one --mcp-config argument: a file, or a JSON object
// when it starts with "{".
func readSessionMCP(arg string, problems *[]MCPProblem) (mcpSource, bool) {
	path, data := arg, []byte(arg)
	if !strings.HasPrefix(strings.TrimSpace(arg), "{") {
		if abs, err := filepath.Abs(arg); err == nil {
			path = abs
		}
		var err error
		if data, err = readConfigFile(path); err != nil {
			*problems = append(*problems, MCPProblem{Path: path, Message: "reading --mcp-config: " + readReason(err)})
			return mcpSource{}, false
		}
	} else {
		path = "--mcp-config"
	}
	p, prob := parseFile(path, data, true)
	if prob != nil {
		*problems = append(*problems, MCPProblem{Path: prob.Path, Line: prob.Line, Column: prob.Column, Message: prob.Message})
		return mcpSource{}, false
	}
	servers, ok := p.raw["mcpServers"]
	if !ok {
		*problems = append(*problems, MCPProblem{Path: path, Message: noServersMessage(p.raw)})
		return mcpSource{}, false
	}
	return mcpSource{scope: ScopeSession, source: path, path: path, servers: servers}, true
}

// noServersMessage is the problem of an MCP file (.mcp.json, a
// --mcp-config file) without "mcpServers", whose top-level keys are raw:
// no server is read from it. Keys whose values look like server entries
// (an object with "command", "url" or "type": the shape of Claude
// Desktop's file without its wrapper, or a hand-written mistake) are named.
func noServersMessage(raw map[string]json.RawMessage) string {
	var entries []string
	for k, v := range raw {
		var m map[string]json.RawMessage
		if json.Unmarshal(v, &m) != nil {
			continue
		}
		for _, f := range []string{"command", "url", "type"} {
			if _, ok := m[f]; ok {
				entries = append(entries, strconv.Quote(k))
				break
			}
		}
	}
	msg := `no "mcpServers" object (want {"mcpServers": {"NAME": {...}}})`
	if len(entries) > 0 {
		slices.Sort(entries)
		msg += fmt.Sprintf(`: the top-level %s %s like server entries; move them into "mcpServers"`,
			strings.Join(entries, ", "), map[bool]string{true: "looks", false: "look"}[len(entries) == 1])
	}
	return msg
}

// strayMCPMessage is the problem of "mcpServers" (value v) in a settings
// file no tool reads servers from.
func strayMCPMessage(v json.RawMessage) string {
	return `"mcpServers" (` + describeKey("mcpServers", v) + `) is not read from this file: neither tackle nor Claude Code reads MCP servers from this settings file; ` +
		"put them in .mcp.json (project), ~/.claude.json (user, or local under projects) or add them with `tackle mcp add`"
}

// stringList decodes raw[key] as a list of strings; a wrong type is a problem.
func stringList(raw map[string]json.RawMessage, key, path string, problems *[]MCPProblem) []string {
	b, ok := raw[key]
	if !ok {
		return nil
	}
	var out []string
	if err := json.Unmarshal(b, &out); err != nil {
		*problems = append(*problems, MCPProblem{Path: path, Message: fmt.Sprintf("%q must be a list of server names, found %s", key, jsonKind(b))})
		return nil
	}
	return out
}

// jsonKind names the kind of a JSON value: "a JSON string", "a JSON array"...
func jsonKind(b json.RawMessage) string {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '{':
		return "a JSON object"
	case '[':
		return "a JSON array"
	case '"':
		return "a JSON string"
	case 't', 'f':
		return "a JSON boolean"
	case 'n':
		return "null"
	}
	return "a JSON number"
}

// ParseMCPEntry reads one server entry given outside the configuration
// files (an agent definition's inline mcpServers), as .mcp.json's entries
// are read: validated, ${VAR} expanded from environ. Source names where it
// came from.
func ParseMCPEntry(name string, raw json.RawMessage, environ []string, source string) (*MCPServer, error) {
	s, err := parseMCPEntry(name, raw, environMap(environ))
	if err != nil {
		return nil, err
	}
	s.Source = source
	return s, nil
}

// parseMCPEntry validates one server entry and expands ${VAR} in it.
func parseMCPEntry(name string, raw json.RawMessage, env map[string]string) (*MCPServer, error) {
	if name == "" {
		return nil, fmt.Errorf("the server name is empty")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, fmt.Errorf("the entry must be a JSON object, found %s", jsonKind(raw))
	}
	s := &MCPServer{Name: name}
	if strings.Contains(name, "__") {
		// mcp__a__b__c is a's tool b__c and a__b's tool c alike.
		s.Warnings = append(s.Warnings, `the name holds "__", which separates a server's name from its tools' in mcp__SERVER__TOOL: a tool of it may be mistaken for another server's, and one of the two is then left out`)
	}
	var typ, command, rawURL string
	var err error
	str := func(key string, dst *string) {
		if b, ok := m[key]; ok && err == nil && string(b) != "null" {
			if json.Unmarshal(b, dst) != nil {
				err = fmt.Errorf("%q must be a string, found %s", key, jsonKind(b))
			}
		}
	}
	str("type", &typ)
	str("command", &command)
	str("url", &rawURL)
	if b, ok := m["args"]; ok && err == nil && string(b) != "null" {
		if json.Unmarshal(b, &s.Args) != nil {
			err = fmt.Errorf(`"args" must be a list of strings`)
		}
	}
	strMap := func(key string, dst *map[string]string) {
		if b, ok := m[key]; ok && err == nil && string(b) != "null" {
			if json.Unmarshal(b, dst) != nil {
				err = fmt.Errorf("%q must be an object of string values", key)
			}
		}
	}
	strMap("env", &s.Env)
	strMap("headers", &s.Headers)
	if b, ok := m["timeout"]; ok && err == nil && string(b) != "null" {
		var ms float64
		switch {
		case json.Unmarshal(b, &ms) != nil:
			err = fmt.Errorf(`"timeout" must be a number of milliseconds, found %s`, jsonKind(b))
		case ms < 0 || ms > math.MaxInt64/float64(time.Millisecond):
			err = fmt.Errorf(`"timeout" %v is out of range (milliseconds, 0 for the default)`, ms)
		default:
			s.Timeout = time.Duration(ms * float64(time.Millisecond))
		}
	}
	if b, ok := m["alwaysLoad"]; ok && err == nil && string(b) != "null" {
		if json.Unmarshal(b, &s.AlwaysLoad) != nil {
			err = fmt.Errorf(`"alwaysLoad" must be true or false, found %s`, jsonKind(b))
		}
	}
	if err != nil {
		return nil, err
	}
	_, hasURL := m["url"]
	switch typ {
	case "":
		if hasURL {
			return nil, fmt.Errorf(`"url" without "type": add "type": "http" (or "sse" for a legacy server)`)
		}
		typ = "stdio"
	case "stdio", "http", "sse":
	case "streamable-http":
		typ = "http"
	case "ws":
		return nil, fmt.Errorf(`type "ws" (WebSocket) is not supported: use "http" or "sse"`)
	default:
		return nil, fmt.Errorf(`unknown type %q: want "stdio", "http" (alias "streamable-http") or "sse"`, typ)
	}
	s.Type = typ
	if _, ok := m["headersHelper"]; ok {
		s.Warnings = append(s.Warnings, `"headersHelper" is not supported yet (ignored)`)
	}
	if b, ok := m["oauth"]; ok && string(b) != "null" {
		o, warnings, oerr := parseOAuth(b)
		if oerr != nil {
			return nil, oerr
		}
		s.OAuth = o
		s.Warnings = append(s.Warnings, warnings...)
	}

	x := expander{env: env}
	switch typ {
	case "stdio":
		if strings.TrimSpace(command) == "" {
			return nil, fmt.Errorf(`a stdio server needs a "command"`)
		}
		if hasURL {
			s.Warnings = append(s.Warnings, `"url" is ignored for a stdio server`)
		}
		if len(s.Headers) > 0 {
			s.Warnings = append(s.Warnings, `"headers" are ignored for a stdio server`)
		}
		s.Command = x.expand(command)
		if strings.TrimSpace(s.Command) == "" {
			return nil, fmt.Errorf(`the "command" %q expands to nothing: a stdio server needs a command`, command)
		}
		for i, a := range s.Args {
			s.Args[i] = x.expand(a)
		}
		for k, v := range s.Env {
			s.Env[k] = x.expand(v)
		}
	default:
		if strings.TrimSpace(rawURL) == "" {
			return nil, fmt.Errorf(`a %s server needs a "url"`, typ)
		}
		if command != "" {
			s.Warnings = append(s.Warnings, fmt.Sprintf(`"command" is ignored for a %s server`, typ))
		}
		s.URL = x.expand(rawURL)
		if !strings.Contains(s.URL, "${") {
			u, perr := url.Parse(s.URL)
			if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return nil, fmt.Errorf("url %q is not an http(s) URL", s.URL)
			}
		}
		for k, v := range s.Headers {
			s.Headers[k] = x.expand(v)
		}
		if o := s.OAuth; o != nil {
			o.ClientID, o.ClientSecret = x.expand(o.ClientID), x.expand(o.ClientSecret)
			o.Scopes, o.ClientMetadataURL = x.expand(o.Scopes), x.expand(o.ClientMetadataURL)
		}
	}
	if s.OAuth != nil && typ == "stdio" {
		s.Warnings = append(s.Warnings, `"oauth" is ignored for a stdio server`)
		s.OAuth = nil
	}
	s.Warnings = append(s.Warnings, x.warnings...)
	return s, nil
}

// parseOAuth reads an "oauth" block: unknown keys are warnings, wrong
// types errors.
func parseOAuth(b json.RawMessage) (*MCPOAuth, []string, error) {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return nil, nil, fmt.Errorf(`"oauth" must be an object, found %s`, jsonKind(b))
	}
	o := &MCPOAuth{}
	var warnings []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		if string(v) == "null" {
			continue
		}
		var dst *string
		switch k {
		case "clientId":
			dst = &o.ClientID
		case "clientSecret":
			dst = &o.ClientSecret
		case "scopes":
			dst = &o.Scopes
		case "clientMetadataUrl":
			dst = &o.ClientMetadataURL
		case "callbackPort":
			var port float64
			if json.Unmarshal(v, &port) != nil || port != math.Trunc(port) || port < 1 || port > 65535 {
				return nil, nil, fmt.Errorf(`"oauth.callbackPort" must be a port number (1-65535), found %s`, v)
			}
			o.CallbackPort = int(port)
			continue
		case "authServerMetadataUrl":
			warnings = append(warnings, `"oauth.authServerMetadataUrl" is not supported yet: tackle discovers the authorization server from the server's metadata (ignored)`)
			continue
		default:
			warnings = append(warnings, fmt.Sprintf("unknown key %q in \"oauth\" (ignored)", k))
			continue
		}
		if json.Unmarshal(v, dst) != nil {
			return nil, nil, fmt.Errorf(`"oauth.%s" must be a string, found %s`, k, jsonKind(v))
		}
	}
	if o.Scopes != "" && strings.TrimSpace(o.Scopes) == "" {
		return nil, nil, fmt.Errorf(`"oauth.scopes" is blank: give space-separated scopes or leave it out`)
	}
	if o.ClientSecret != "" && o.ClientID == "" {
		return nil, nil, fmt.Errorf(`"oauth.clientSecret" needs "oauth.clientId"`)
	}
	if u := o.ClientMetadataURL; u != "" && !strings.Contains(u, "${") {
		pu, err := url.Parse(u)
		if err != nil || pu.Scheme != "https" || pu.Host == "" || pu.Path == "" || pu.Path == "/" {
			return nil, nil, fmt.Errorf(`"oauth.clientMetadataUrl" %q must be an https URL with a path`, u)
		}
	}
	return o, warnings, nil
}

// varRef matches ${NAME} and ${NAME:-default}.
var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// expander expands ${VAR} and ${VAR:-default} from env, as a shell would
// (the default is used when VAR is unset or empty). An unset variable
// without a default is left as written and noted once in warnings.
// expander expands ${VAR} and ${VAR:-default} from env. A nil env is no
// environment at all (an entry checked before any session uses it): an
// unset ${VAR} is left as is without a warning, since the sessions that
// use the entry expand it from theirs.
type expander struct {
	env      map[string]string
	warnings []string
	seen     map[string]bool
}

func (x *expander) expand(s string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	return varRef.ReplaceAllStringFunc(s, func(ref string) string {
		m := varRef.FindStringSubmatch(ref)
		v, ok := x.env[m[1]]
		if ok && (v != "" || m[2] == "") {
			return v
		}
		if m[2] != "" {
			return m[3]
		}
		if x.env != nil && !x.seen[m[1]] {
			if x.seen == nil {
				x.seen = map[string]bool{}
			}
			x.seen[m[1]] = true
			x.warnings = append(x.warnings, fmt.Sprintf("${%s} is not set (left as is)", m[1]))
		}
		return ref
	})
}

// environMap turns KEY=VALUE entries into a map; a later entry wins.
func environMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			m[k] = v
		}
	}
	return m
}

// Defaults of MCPSettings.
const (
	DefaultMCPStartupTimeout  = 30 * time.Second
	DefaultMCPMaxOutputTokens = 25000
)

// MCPSettings are the MCP knobs of the settings and the environment.
type MCPSettings struct {
	// StartupTimeout bounds a server's start and initialize
	// (mcp.startupTimeoutSeconds; env MCP_TIMEOUT in ms; default 30 s).
	StartupTimeout time.Duration
	// MaxOutputTokens caps a tool result (mcp.maxOutputTokens; env
	// MAX_MCP_OUTPUT_TOKENS; default 25000).
	MaxOutputTokens int
	// ToolTimeout is the default per-call timeout (mcp.toolTimeoutMs; env
	// MCP_TOOL_TIMEOUT in ms; default 0: none).
	ToolTimeout time.Duration
}

// MCP returns the MCP settings: the "mcp" object of the settings files
// (each field from the highest file that sets it), overridden by
// MAX_MCP_OUTPUT_TOKENS, MCP_TIMEOUT and MCP_TOOL_TIMEOUT in environ.
// Invalid or non-positive values are ignored. A nil s gives the defaults
// (and the environment).
func (s *Settings) MCP(environ []string) MCPSettings {
	out := MCPSettings{StartupTimeout: DefaultMCPStartupTimeout, MaxOutputTokens: DefaultMCPMaxOutputTokens}
	if s != nil {
		for _, ly := range s.Layers {
			raw, ok := ly.Raw["mcp"]
			if !ok {
				continue
			}
			var f struct {
				StartupTimeoutSeconds *float64 `json:"startupTimeoutSeconds"`
				MaxOutputTokens       *float64 `json:"maxOutputTokens"`
				ToolTimeoutMs         *float64 `json:"toolTimeoutMs"`
			}
			if json.Unmarshal(raw, &f) != nil {
				continue
			}
			if v := f.StartupTimeoutSeconds; v != nil && *v > 0 && *v < 1e6 {
				out.StartupTimeout = time.Duration(*v * float64(time.Second))
			}
			if v := f.MaxOutputTokens; v != nil && *v >= 1 && *v < math.MaxInt32 {
				out.MaxOutputTokens = int(*v)
			}
			if v := f.ToolTimeoutMs; v != nil && *v >= 0 && *v < 1e12 {
				out.ToolTimeout = time.Duration(*v * float64(time.Millisecond))
			}
		}
	}
	env := environMap(environ)
	num := func(key string) (int64, bool) {
		n, err := strconv.ParseInt(strings.TrimSpace(env[key]), 10, 64)
		return n, err == nil
	}
	if n, ok := num("MAX_MCP_OUTPUT_TOKENS"); ok && n >= 1 && n < math.MaxInt32 {
		out.MaxOutputTokens = int(n)
	}
	if n, ok := num("MCP_TIMEOUT"); ok && n > 0 && n < 1e12 {
		out.StartupTimeout = time.Duration(n) * time.Millisecond
	}
	if n, ok := num("MCP_TOOL_TIMEOUT"); ok && n >= 0 && n < 1e12 {
		out.ToolTimeout = time.Duration(n) * time.Millisecond
	}
	return out
}
