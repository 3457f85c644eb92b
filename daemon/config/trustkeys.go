package config

import (
	"encoding/json"
	"fmt"
	"slices"
)

// This file is THE list of what a project's settings may do before the
// project is trusted. A repository is data someone else wrote: until the
// person runs `tackle trust`, its settings files (project and local scope)
// may only narrow what tackle does. Every key tackle reads is listed here
// with its effect; Load applies the list, so no reader of Settings can
// forget it. A key that is not listed is dropped from an untrusted
// project's files: a new setting is safe until someone decides here what
// it can do.

// effect is what a settings key from a project file can do to what tackle
// may do.
type effect int

const (
	// widens: more is allowed, code runs, or data leaves the machine.
	// Ignored until the project is trusted, and listed in Settings.Ignored.
	widens effect = iota
	// narrows: less is allowed (a deny rule). Applies untrusted.
	narrows
	// neutral: changes nothing tackle may do (a listing budget, a
	// timeout). Applies untrusted.
	neutral
)

// projectKeys are the top-level keys tackle reads. "permissions" is
// decided key by key (permissionKeys).
var projectKeys = map[string]effect{
	"$schema":                    neutral,
	"hooks":                      widens,  // runs commands at every tool call
	"disableAllHooks":            widens,  // turns off the person's own hooks, which may guard
	"mcpServers":                 widens,  // starts servers
	"enableAllProjectMcpServers": widens,  // a project approving its own servers
	"enabledMcpjsonServers":      widens,  // likewise
	"disabledMcpjsonServers":     narrows, // fewer servers
	"env":                        widens,  // changes what every command and server runs with
	"apiKeyHelper":               widens,  // a command whose output is a credential
	"awsAuthRefresh":             widens,  // commands Claude Code runs for credentials
	"awsCredentialExport":        widens,
	"otelHeadersHelper":          widens,
	"statusLine":                 widens, // a command
	"plugins":                    widens, // skills with !`cmd` lines and hooks, agent definitions
	"enabledPlugins":             widens, // untrusted, only its false entries apply (narrowEnabledPlugins)
	"extraKnownMarketplaces":     widens,
	"webSearch":                  widens, // where the model's queries go, and which variable's secret is sent
	"sandbox":                    widens, // untrusted, only its narrowing parts apply (narrowSandbox)
	"toolSearch":                 neutral,
	"contextTokens":              neutral,
	"skillListingBudget":         neutral,
	"mcp":                        neutral, // startup and tool timeouts, output limits
	"model":                      neutral, // which model answers (the person's key pays either way)
	"modelAliases":               neutral,
	"maxTurns":                   neutral,
	"autoCompactPercent":         neutral,
	"provider":                   widens, // a base URL and key variable: where the conversation and the key go
	// The person's consent to bypassPermissions is theirs: only a user or
	// managed file gives it.
	bypassConsentKey: widens,
}

// permissionKeys are the keys of the "permissions" block. defaultMode is
// decided by its value (narrowingModes).
var permissionKeys = map[string]effect{
	"allow":                        widens,
	"additionalDirectories":        widens,
	"ask":                          narrows,
	"deny":                         narrows,
	"disableBypassPermissionsMode": narrows,
	"askTimeoutSeconds":            neutral, // nobody answering still denies
}

// narrowingModes are the permission modes an untrusted project may set:
// they allow no more than default. (acceptEdits and bypassPermissions allow
// more; dontAsk takes the prompt away from the person, which is not a
// repository's choice to make either.)
var narrowingModes = map[string]bool{"default": true, "plan": true}

// bypassConsentKey in a user or managed settings file is the person's
// consent to a project file's `defaultMode: "bypassPermissions"` (Claude
// Code writes it to ~/.claude/settings.json once the person accepted the
// mode). `tackle trust --allow-bypass DIR` gives it for one project.
const bypassConsentKey = "skipDangerousModePermissionPrompt"

const modeBypass = "bypassPermissions"

// trustState is what Load knows of a project's trust.
type trustState struct {
	trusted bool
	// bypass: the person consented to bypassPermissions from this
	// project's files (tackle trust --allow-bypass).
	bypass bool
}

// workspaceFile reports whether a settings file comes from the project
// (its files may be someone else's).
func workspaceFile(scope string) bool { return scope == ScopeProject || scope == ScopeLocal }

// applyTrust returns what a project or local file f contributes, and a
// line for each setting it loses: untrusted, only the keys that narrow or
// change nothing; trusted, everything but a bypassPermissions defaultMode
// without the person's consent (consent). dir is the project, for the hint.
func applyTrust(src Source, f *parsed, ts trustState, consent bool, dir string) (*parsed, []string) {
	mode := f.perms.DefaultMode
	bypassUnconsented := mode != nil && *mode == modeBypass && !consent
	if ts.trusted && !bypassUnconsented {
		return f, nil
	}
	var ignored []string
	out := &parsed{raw: make(map[string]json.RawMessage, len(f.raw)), perms: f.perms}
	keys := make([]string, 0, len(f.raw))
	for k := range f.raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := f.raw[k]
		if k == "permissions" {
			continue
		}
		if k == "sandbox" && !ts.trusted {
			kept, lost := narrowSandbox(v)
			if kept != nil {
				out.raw[k] = kept
			}
			for _, l := range lost {
				ignored = append(ignored, "sandbox."+l+" in "+src.Path)
			}
			continue
		}
		if k == "enabledPlugins" && !ts.trusted {
			kept, lost := narrowEnabledPlugins(v)
			if kept != nil {
				out.raw[k] = kept
			}
			if lost > 0 {
				ignored = append(ignored, plural(lost, "enabled plugin", "enabled plugins")+" in "+src.Path)
			}
			continue
		}
		e, known := projectKeys[k]
		if ts.trusted || (known && e != widens) {
			out.raw[k] = v
			continue
		}
		if known {
			ignored = append(ignored, describeKey(k, v)+" in "+src.Path)
		}
	}

	// The permissions block, key by key.
	var perms map[string]json.RawMessage
	if raw, ok := f.raw["permissions"]; ok {
		_ = json.Unmarshal(raw, &perms) // parse checked its shape
	}
	kept := map[string]json.RawMessage{}
	p := &out.perms
	for k, v := range perms {
		e, known := permissionKeys[k]
		switch {
		case k == "defaultMode":
			if mode == nil || (narrowingModes[*mode] || ts.trusted) && !bypassUnconsented {
				kept[k] = v
				continue
			}
			p.DefaultMode = nil
			line := fmt.Sprintf("permissions.defaultMode %q in %s", *mode, src.Path)
			if ts.trusted {
				line += fmt.Sprintf(" (a project file may set bypassPermissions only with your consent: tackle trust --allow-bypass %s, or %q: true in your user settings)", dir, bypassConsentKey)
			}
			ignored = append(ignored, line)
		case ts.trusted || known && e != widens:
			kept[k] = v
		case k == "allow":
			ignored = append(ignored, plural(len(p.Allow), "allow rule", "allow rules")+" in "+src.Path)
			p.Allow = nil
		case k == "additionalDirectories":
			ignored = append(ignored, plural(len(p.AdditionalDirectories), "additional directory", "additional directories")+" in "+src.Path)
			p.AdditionalDirectories = nil
		}
	}
	if perms != nil {
		b, err := json.Marshal(kept)
		if err != nil {
			b = []byte("{}")
		}
		out.raw["permissions"] = b
	}
	slices.Sort(ignored)
	return out, ignored
}

// describeKey names an ignored setting: "2 hooks", "1 MCP server", or the
// key in quotes.
func describeKey(k string, v json.RawMessage) string {
	switch k {
	case "hooks":
		var hooks map[string][]struct {
			Hooks []json.RawMessage `json:"hooks"`
		}
		_ = json.Unmarshal(v, &hooks) // a wrong shape counts nothing
		n := 0
		for _, groups := range hooks {
			for _, g := range groups {
				n += len(g.Hooks)
			}
		}
		return plural(n, "hook", "hooks")
	case "mcpServers":
		var m map[string]json.RawMessage
		_ = json.Unmarshal(v, &m)
		return plural(len(m), "MCP server", "MCP servers")
	}
	return fmt.Sprintf("%q", k)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// unreadKey is a top-level key that no tool reads from some settings
// files: Load reports it there (Settings.Ignored) whatever the trust, and
// drops it from the file's layer.
type unreadKey struct {
	key  string
	line func(path string, v json.RawMessage) string
}

// strayMCPServers: neither tackle nor Claude Code reads "mcpServers" from
// ~/.claude/settings.json, .claude/settings.json, .claude/settings.local.json
// or .tackle/settings.json (Claude Code reads servers from .mcp.json and
// ~/.claude.json only; tackle also from its own user and local files and
// the managed file).
var strayMCPServers = unreadKey{"mcpServers", func(path string, v json.RawMessage) string {
	return describeKey("mcpServers", v) + " in " + path + `: "mcpServers" is not read from this file (by tackle or Claude Code), trusted or not; ` +
		"MCP servers belong in .mcp.json (project), ~/.claude.json (user, or local under projects) or `tackle mcp add`"
}}

// projectTrustKey: trust settings are the person's (user and managed
// files); a project's files cannot set them.
var projectTrustKey = unreadKey{trustSettingsKey, func(path string, _ json.RawMessage) string {
	return fmt.Sprintf("%q in %s: trust settings are read from your user settings only, never from a project's files", trustSettingsKey, path)
}}

// unreadKeys returns the keys of unreadKey that the settings file src of
// projectDir does not read.
func (l *Loader) unreadKeys(src Source, projectDir string) []unreadKey {
	var out []unreadKey
	if !l.readsMCPServers(src.Path, projectDir) {
		out = append(out, strayMCPServers)
	}
	if workspaceFile(src.Scope) {
		out = append(out, projectTrustKey)
	}
	return out
}

// readsMCPServers reports whether MCPServers reads "mcpServers" from the
// settings file path (for the project projectDir): tackle's local file,
// tackle's user file and the managed file.
func (l *Loader) readsMCPServers(path, projectDir string) bool {
	switch path {
	case join(projectDir, ".tackle", "settings.local.json"), join(l.opts.ConfigHome, "tackle", "settings.json"), l.opts.ManagedPath:
		return true
	}
	return false
}

// withoutKey returns f without the top-level key k (f is shared: it is
// copied).
func withoutKey(f *parsed, k string) *parsed {
	out := &parsed{raw: make(map[string]json.RawMessage, len(f.raw)), perms: f.perms}
	for key, v := range f.raw {
		if key != k {
			out.raw[key] = v
		}
	}
	return out
}

// consented reports whether a user or managed file of srcs holds the
// person's consent to bypassPermissions from project files.
func (l *Loader) consentedLocked(srcs []Source) bool {
	for _, src := range srcs {
		if workspaceFile(src.Scope) {
			continue
		}
		e := l.files[src.Path]
		if e == nil || e.good == nil || e.empty {
			continue
		}
		var yes bool
		if raw, ok := e.good.raw[bypassConsentKey]; ok && json.Unmarshal(raw, &yes) == nil && yes {
			return true
		}
	}
	return false
}

// narrowEnabledPlugins keeps of an untrusted project's "enabledPlugins"
// the entries that turn a plugin off (false), which only narrow, and
// counts the others (a plugin the repository would turn on). It returns
// nil when nothing is kept.
func narrowEnabledPlugins(v json.RawMessage) (json.RawMessage, int) {
	var in map[string]json.RawMessage
	if json.Unmarshal(v, &in) != nil {
		return nil, 1
	}
	out := map[string]json.RawMessage{}
	lost := 0
	for id, x := range in {
		var on bool
		if json.Unmarshal(x, &on) == nil && !on {
			out[id] = x
			continue
		}
		lost++
	}
	if len(out) == 0 {
		return nil, lost
	}
	b, _ := json.Marshal(out)
	return b, lost
}

// narrowSandbox keeps of an untrusted project's "sandbox" block what only
// confines more: enabling it, failing when it is unavailable, turning
// off auto-allow and unsandboxed fallback, denied domains, denied reads
// and writes, hidden variables. It returns the kept block (nil when
// nothing is kept) and the keys it dropped.
func narrowSandbox(v json.RawMessage) (json.RawMessage, []string) {
	var in map[string]json.RawMessage
	if json.Unmarshal(v, &in) != nil {
		return nil, []string{"(not an object)"}
	}
	out := map[string]json.RawMessage{}
	var lost []string
	is := func(raw json.RawMessage, want bool) bool {
		var b bool
		return json.Unmarshal(raw, &b) == nil && b == want
	}
	sub := func(name string, raw json.RawMessage, keep ...string) {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			lost = append(lost, name)
			return
		}
		kept := map[string]json.RawMessage{}
		for k, x := range m {
			if slices.Contains(keep, k) {
				kept[k] = x
			} else {
				lost = append(lost, name+"."+k)
			}
		}
		if len(kept) > 0 {
			b, _ := json.Marshal(kept)
			out[name] = b
		}
	}
	for k, x := range in {
		switch k {
		case "enabled", "failIfUnavailable":
			if is(x, true) {
				out[k] = x
				continue
			}
		case "autoAllowBashIfSandboxed", "allowUnsandboxedCommands":
			if is(x, false) {
				out[k] = x
				continue
			}
		case "network":
			sub(k, x, "deniedDomains")
			continue
		case "filesystem":
			sub(k, x, "denyRead", "denyWrite")
			continue
		case "credentials":
			sub(k, x, "envVars")
			continue
		}
		lost = append(lost, k)
	}
	slices.Sort(lost)
	if len(out) == 0 {
		return nil, lost
	}
	b, _ := json.Marshal(out)
	return b, lost
}
