package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// This file reads Claude Code's plugins: which plugins the settings turn
// on, where each one is installed, and what it brings (skills, commands,
// agents, hooks, MCP servers), as Claude Code reads them (its plugins
// reference, and what its 2.1.332 binary does where the two differ).
//
//   - "enabledPlugins" ({"name@marketplace": true|false}) is merged key by
//     key over the settings layers, a higher file winning (user < project
//     < local < managed); only true turns a plugin on. An untrusted
//     project's files contribute only their false entries (trustkeys.go),
//     so a repository never turns a plugin on by itself.
//   - An enabled plugin is found through Claude Code's plugins root
//     (~/.claude/plugins, CLAUDE_CODE_PLUGIN_CACHE_DIR): its
//     installed_plugins.json records (version 2: a list of installations
//     per id, each with a scope; version 1: one installation) give the
//     directory, the first whose scope applies to the project (user and
//     managed always; project and local when their projectPath is the
//     project or in the same repository) and that exists. Its marketplace
//     must be registered in known_marketplaces.json, as Claude Code
//     requires; a plugin of a registered marketplace with a relative-path
//     source and no install record is read in place from the
//     marketplace's folder. A marketplace plugin without a plugin.json
//     takes its manifest from its catalog entry (the marketplace's
//     "strict": false plugins); the entry's skills add to skills/, so
//     plugins sharing one source each get all its skills, as in Claude
//     Code (anthropics/claude-code#21148).
//   - tackle's own "plugins" setting lists plugin directories (as Claude
//     Code's --plugin-dir), merged over the layers.
//
// A plugin's name is its .claude-plugin/plugin.json "name", else the id's
// name part, else its directory's name: its skills, commands and agents are
// "name:x", its MCP servers "plugin:name:server". A file that cannot be
// read is a PluginProblem: the plugin it concerns (or only that part of
// it) is left out, the others load.

// ScopePlugin is the scope of what a plugin brings (its hooks, its MCP
// servers).
const ScopePlugin = "plugin"

// Claude Code's plugin files.
const (
	// InstalledPluginsFile, in the plugins root, records every install.
	InstalledPluginsFile = "installed_plugins.json"
	// KnownMarketplacesFile, in the plugins root, records the registered
	// marketplaces: {"name": {"source": {...}, "installLocation": DIR}}.
	KnownMarketplacesFile = "known_marketplaces.json"
	// PluginManifest is a plugin's manifest, below its root.
	PluginManifest = ".claude-plugin/plugin.json"
	// MarketplaceManifest is a marketplace's catalog, below its folder.
	MarketplaceManifest = ".claude-plugin/marketplace.json"
	// InlineMarketplace is the marketplace part Claude Code gives a plugin
	// loaded from a directory (--plugin-dir; tackle's "plugins").
	InlineMarketplace = "inline"
)

// Parts of a plugin a PluginProblem concerns.
const (
	PartHooks = "hooks"
	PartMCP   = "mcpServers"
)

// Plugin is one plugin a project's settings turn on. Paths are absolute.
type Plugin struct {
	// ID is "name@marketplace" as enabledPlugins names it ("" for a
	// directory of the "plugins" setting).
	ID string
	// Name is the plugin.json "name", else the id's name part, else the
	// directory's name: the namespace of its skills, commands, agents and
	// MCP servers.
	Name string
	// Dir is the plugin's root (${CLAUDE_PLUGIN_ROOT}).
	Dir string
	// DataDir is its persistent directory (${CLAUDE_PLUGIN_DATA}):
	// <plugins root>/data/<id, characters outside [A-Za-z0-9_-] as "-">.
	// It may not exist.
	DataDir string
	// Version is plugin.json's "version", else the install record's.
	Version     string
	Description string
	// Source is the settings file whose entry turned the plugin on.
	Source Source
	// Skills are directories of <name>/SKILL.md (skills/ and the
	// manifest's "skills", which add to it) or directories holding a
	// SKILL.md themselves.
	Skills []string
	// Commands are command files or directories of them (the manifest's
	// "commands", which replace commands/).
	Commands []string
	// Agents are agent files or directories of them (the manifest's
	// "agents", which replace agents/).
	Agents []string
	// Hooks are hooks/hooks.json and the manifest's "hooks" (files or
	// inline), each Raw an object of events ({"PreToolUse": [...]}).
	Hooks []PluginFile
	// MCPServers are .mcp.json and the manifest's "mcpServers" (files or
	// inline), each Raw an object of servers; a later one wins for a name.
	MCPServers []PluginFile
}

// Label names the plugin in messages: its id, else its name.
func (p *Plugin) Label() string {
	if p.ID != "" {
		return p.ID
	}
	return p.Name
}

// PluginFile is one part of a plugin's configuration.
type PluginFile struct {
	// Path is the file (plugin.json for an inline block).
	Path string
	Raw  json.RawMessage
}

// PluginProblem is a plugin, or a part of one, that could not be loaded.
type PluginProblem struct {
	// Plugin is the plugin's id or name ("" for a problem of a shared file).
	Plugin string
	// Part is what the problem leaves out: "" the plugin (or what the
	// path says), PartHooks some of its hooks, PartMCP some of its MCP
	// servers.
	Part string
	// Path is the file concerned.
	Path    string
	Message string
}

// Error returns "path: plugin P: message".
func (p PluginProblem) Error() string {
	var b strings.Builder
	if p.Path != "" {
		b.WriteString(p.Path + ": ")
	}
	if p.Plugin != "" {
		b.WriteString("plugin " + p.Plugin + ": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// pluginRegistry is what Load read of the plugins root for a Settings.
type pluginRegistry struct {
	root                   string // the plugins root
	installed, known       map[string]json.RawMessage
	installedOK, knownOK   bool // the file was read (and parsed) at some point
	installedErr, knownErr *Problem
}

// pluginsMemo computes a Settings' plugins once.
type pluginsMemo struct {
	once     sync.Once
	plugins  []Plugin
	problems []PluginProblem
}

// PluginsRoot returns Claude Code's plugins root for home:
// CLAUDE_CODE_PLUGIN_CACHE_DIR when set, else home/.claude/plugins.
func PluginsRoot(home string) string {
	if d := os.Getenv("CLAUDE_CODE_PLUGIN_CACHE_DIR"); d != "" {
		return d
	}
	return join(home, ".claude", "plugins")
}

// refreshPluginRegistryLocked reads installed_plugins.json and
// known_marketplaces.json through the file cache (watched like settings
// files: installing a plugin is a settings change) and reports whether a
// new directory is to be watched; memo is Load's stats (nil: none).
func (l *Loader) refreshPluginRegistryLocked(memo *statMemo) (*pluginRegistry, bool) {
	r := &pluginRegistry{root: l.opts.PluginsDir}
	if r.root == "" {
		return r, false
	}
	newDirs := false
	read := func(name string) (map[string]json.RawMessage, bool, *Problem) {
		p := filepath.Join(r.root, name)
		newDirs = l.watchDirLocked(p) || newDirs
		e := l.files[p]
		if e == nil {
			e = &fileEntry{rawOnly: true}
			l.files[p] = e
		}
		l.refreshLockedWith(p, memo)
		if e.good == nil || e.empty {
			return nil, e.problem == nil && e.stamp.exists, e.problem
		}
		return e.good.raw, true, e.problem
	}
	r.installed, r.installedOK, r.installedErr = read(InstalledPluginsFile)
	r.known, r.knownOK, r.knownErr = read(KnownMarketplacesFile)
	return r, newDirs
}

// Plugins returns the plugins the settings turn on, marketplace plugins
// (by id) first, then the directories of "plugins" in settings order, and
// the problems of those that could not be loaded (each leaves out only
// what it concerns). A name already taken by an earlier plugin is a
// problem and the later plugin is left out. The result is computed once
// per Settings: a change of a settings file or of the plugins root's
// registry gives a new Settings (Load); a plugin's own files are read
// again then. A nil s has no plugins.
func (s *Settings) Plugins() ([]Plugin, []PluginProblem) {
	if s == nil {
		return nil, nil
	}
	if s.plugins == nil {
		return s.readPlugins()
	}
	m := s.plugins
	m.once.Do(func() { m.plugins, m.problems = s.readPlugins() })
	return m.plugins, m.problems
}

// enabledEntry is the highest enabledPlugins entry of an id.
type enabledEntry struct {
	on  bool
	src Source
}

// EnabledPlugins returns the enabledPlugins entries of the layers merged
// key by key (a higher file wins), and the problems of entries that are
// not "name@marketplace": true|false.
func (s *Settings) EnabledPlugins() (map[string]bool, []PluginProblem) {
	ent, probs := s.enabledPlugins()
	out := make(map[string]bool, len(ent))
	for id, e := range ent {
		out[id] = e.on
	}
	return out, probs
}

func (s *Settings) enabledPlugins() (map[string]enabledEntry, []PluginProblem) {
	out := map[string]enabledEntry{}
	var probs []PluginProblem
	for _, ly := range s.Layers {
		raw, ok := ly.Raw["enabledPlugins"]
		if !ok || isNull(raw) {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			probs = append(probs, PluginProblem{Path: ly.Source.Path, Message: fmt.Sprintf(`"enabledPlugins" must be an object of "name@marketplace": true|false, found %s (ignored)`, jsonKind(raw))})
			continue
		}
		for _, id := range slices.Sorted(maps.Keys(m)) {
			v := m[id]
			var on bool
			if err := json.Unmarshal(v, &on); err != nil {
				// Claude Code accepts a list of versions but leaves the
				// plugin off; anything else is off too.
				var list []json.RawMessage
				if json.Unmarshal(v, &list) != nil {
					probs = append(probs, PluginProblem{Plugin: id, Path: ly.Source.Path, Message: fmt.Sprintf("enabledPlugins: want true or false, found %s (the plugin stays off)", jsonKind(v))})
				}
				on = false
			}
			out[id] = enabledEntry{on: on, src: ly.Source}
		}
	}
	return out, probs
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// readPlugins does the work of Plugins.
func (s *Settings) readPlugins() ([]Plugin, []PluginProblem) {
	var (
		out   []Plugin
		probs []PluginProblem
		names = map[string]string{} // plugin name -> the plugin that has it
	)
	add := func(p *Plugin, ps []PluginProblem) {
		probs = append(probs, ps...)
		if p == nil {
			return
		}
		if other, taken := names[p.Name]; taken {
			probs = append(probs, PluginProblem{Plugin: p.Label(), Path: p.Dir, Message: fmt.Sprintf("not loaded: the plugin name %q is already %s's (give one of them another \"name\" in its plugin.json)", p.Name, other)})
			return
		}
		names[p.Name] = p.Label()
		out = append(out, *p)
	}

	enabled, eprobs := s.enabledPlugins()
	probs = append(probs, eprobs...)
	reg := s.registry
	if reg == nil {
		reg = &pluginRegistry{}
	}
	var ids []string
	for id, e := range enabled {
		if e.on {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	if len(ids) > 0 {
		probs = append(probs, reg.fileProblems()...)
	}
	installed, iprobs := reg.records()
	probs = append(probs, iprobs...)
	for _, id := range ids {
		p, ps := s.resolveEnabled(id, enabled[id].src, reg, installed)
		add(p, ps)
	}

	for _, d := range s.pluginDirs(&probs) {
		p, ps := readPlugin(d.dir, "", filepath.Base(d.dir), d.src, "", nil)
		if p != nil && reg.root != "" {
			p.DataDir = filepath.Join(reg.root, "data", dataDirName(p.Name+"@"+InlineMarketplace))
		}
		add(p, ps)
	}
	return out, probs
}

// pluginDir is a directory of the "plugins" setting.
type pluginDir struct {
	dir string
	src Source
}

// pluginDirs are the directories of the "plugins" settings of the layers,
// lowest first, once each: "~/x" against the home directory, a relative
// one against the project of a project or local file and against the
// project directory for the others.
func (s *Settings) pluginDirs(probs *[]PluginProblem) []pluginDir {
	var out []pluginDir
	seen := map[string]bool{}
	for _, ly := range s.Layers {
		raw, ok := ly.Raw["plugins"]
		if !ok || isNull(raw) {
			continue
		}
		var list []string
		if err := json.Unmarshal(raw, &list); err != nil {
			*probs = append(*probs, PluginProblem{Path: ly.Source.Path, Message: fmt.Sprintf(`"plugins" must be a list of plugin directories, found %s (ignored)`, jsonKind(raw))})
			continue
		}
		for _, d := range list {
			abs := AdditionalDirectory(d, ly.Source, s.root, s.home)
			if abs == "" {
				*probs = append(*probs, PluginProblem{Path: ly.Source.Path, Message: fmt.Sprintf("plugins: %q cannot be resolved to a directory (ignored)", d)})
				continue
			}
			if seen[abs] {
				continue
			}
			seen[abs] = true
			if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
				*probs = append(*probs, PluginProblem{Path: ly.Source.Path, Message: fmt.Sprintf("plugins: %s is not a directory (ignored)", abs)})
				continue
			}
			out = append(out, pluginDir{dir: abs, src: ly.Source})
		}
	}
	return out
}

// fileProblems are the registry files that could not be read.
func (r *pluginRegistry) fileProblems() []PluginProblem {
	var out []PluginProblem
	for _, p := range []*Problem{r.installedErr, r.knownErr} {
		if p != nil {
			out = append(out, PluginProblem{Path: p.Path, Message: p.Message})
		}
	}
	return out
}

// installRecord is one installation of installed_plugins.json.
type installRecord struct {
	Scope       string `json:"scope"`
	ProjectPath string `json:"projectPath"`
	InstallPath string `json:"installPath"`
	Version     string `json:"version"`
}

// records are the install records by id: version 2's lists, version 1's
// single (user) installation.
func (r *pluginRegistry) records() (map[string][]installRecord, []PluginProblem) {
	if r.installed == nil {
		return nil, nil
	}
	path := filepath.Join(r.root, InstalledPluginsFile)
	version := 1
	if v, ok := r.installed["version"]; ok {
		if json.Unmarshal(v, &version) != nil {
			return nil, []PluginProblem{{Path: path, Message: `"version" must be a number (the installed plugins are not read)`}}
		}
	}
	raw, ok := r.installed["plugins"]
	if !ok {
		return nil, nil
	}
	var byID map[string]json.RawMessage
	if err := json.Unmarshal(raw, &byID); err != nil {
		return nil, []PluginProblem{{Path: path, Message: fmt.Sprintf(`"plugins" must be an object of plugin ids, found %s (the installed plugins are not read)`, jsonKind(raw))}}
	}
	out := make(map[string][]installRecord, len(byID))
	var probs []PluginProblem
	for id, v := range byID {
		switch version {
		case 1:
			var rec installRecord
			if err := json.Unmarshal(v, &rec); err != nil {
				probs = append(probs, PluginProblem{Plugin: id, Path: path, Message: "the install record is not an object (ignored)"})
				continue
			}
			rec.Scope = "user"
			if rec.InstallPath == "" && rec.Version != "" {
				if name, mkt, ok := splitPluginID(id); ok {
					rec.InstallPath = filepath.Join(r.root, "cache", mkt, name, rec.Version)
				}
			}
			out[id] = []installRecord{rec}
		case 2:
			var recs []installRecord
			if err := json.Unmarshal(v, &recs); err != nil {
				probs = append(probs, PluginProblem{Plugin: id, Path: path, Message: "the install records must be a list (ignored)"})
				continue
			}
			out[id] = recs
		default:
			return nil, []PluginProblem{{Path: path, Message: fmt.Sprintf("version %d is not known to tackle (1 and 2 are): the installed plugins are not read", version)}}
		}
	}
	slices.SortFunc(probs, func(a, b PluginProblem) int { return strings.Compare(a.Plugin, b.Plugin) })
	return out, probs
}

// splitPluginID splits "name@marketplace" at its last "@".
func splitPluginID(id string) (name, marketplace string, ok bool) {
	i := strings.LastIndexByte(id, '@')
	if i <= 0 || i == len(id)-1 {
		return "", "", false
	}
	name, marketplace = id[:i], id[i+1:]
	if !plainName(name) || !plainName(marketplace) {
		return "", "", false
	}
	return name, marketplace, true
}

// plainName reports whether s may name a plugin or marketplace (and so a
// directory): letters, digits, ".", "_" and "-", starting with a letter or
// digit, as Claude Code requires of each part of a plugin id.
func plainName(s string) bool {
	if s == "" || s == "." || s == ".." {
		return false
	}
	for i, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if !ok && (i == 0 || r != '.' && r != '_' && r != '-') {
			return false
		}
	}
	return true
}

// dataDirName is a plugin id as its data directory's name.
func dataDirName(id string) string {
	b := []byte(id)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	return string(b)
}

// resolveEnabled finds and reads the enabled plugin id.
func (s *Settings) resolveEnabled(id string, src Source, reg *pluginRegistry, installed map[string][]installRecord) (*Plugin, []PluginProblem) {
	name, mkt, ok := splitPluginID(id)
	if !ok {
		return nil, []PluginProblem{{Plugin: id, Path: src.Path, Message: `enabledPlugins: a plugin id is "name@marketplace" (letters, digits, ".", "_" and "-"): not loaded`}}
	}
	installedPath := filepath.Join(reg.root, InstalledPluginsFile)
	knownPath := filepath.Join(reg.root, KnownMarketplacesFile)
	var market struct {
		InstallLocation string `json:"installLocation"`
	}
	mraw, known := reg.known[mkt]
	if known {
		if json.Unmarshal(mraw, &market) != nil {
			return nil, []PluginProblem{{Plugin: id, Path: knownPath, Message: fmt.Sprintf("the entry of marketplace %q is not an object: not loaded", mkt)}}
		}
	}
	if !known {
		why := fmt.Sprintf("enabled here, but its marketplace %q is not registered in %s: not loaded (claude plugin marketplace add registers it)", mkt, knownPath)
		if !reg.knownOK {
			why = fmt.Sprintf("enabled here, but %s could not be read, so its marketplace %q is not known: not loaded", knownPath, mkt)
		}
		return nil, []PluginProblem{{Plugin: id, Path: src.Path, Message: why}}
	}
	data := filepath.Join(reg.root, "data", dataDirName(id))
	entry := catalogEntry(market.InstallLocation, name)

	// The install record that applies to the project.
	var first *installRecord
	for _, rec := range installed[id] {
		if !s.recordApplies(rec) || rec.InstallPath == "" {
			continue
		}
		dir := rec.InstallPath
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(reg.root, dir)
		}
		if first == nil {
			r := rec
			r.InstallPath = dir
			first = &r
		}
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			p, probs := readPlugin(dir, id, name, src, data, entry)
			if p != nil && p.Version == "" {
				p.Version = rec.Version
			}
			return p, probs
		}
	}
	if first != nil {
		return nil, []PluginProblem{{Plugin: id, Path: first.InstallPath, Message: fmt.Sprintf("installed (%s), but the directory is missing: not loaded (claude plugin install %s installs it again)", installedPath, id)}}
	}

	// No install: a relative-path plugin of the marketplace is read in place.
	if dir, prob := inPlace(entry); dir != "" {
		return readPlugin(dir, id, name, src, data, entry)
	} else if prob != "" {
		return nil, []PluginProblem{{Plugin: id, Message: prob}}
	}
	why := fmt.Sprintf("enabled here, but not installed (no record in %s): not loaded (claude plugin install %s)", installedPath, id)
	if len(installed[id]) > 0 {
		why = fmt.Sprintf("enabled here, but installed for other projects only (%s): not loaded (claude plugin install %s --scope project, here)", installedPath, id)
	}
	if !reg.installedOK && reg.installedErr != nil {
		why = fmt.Sprintf("enabled here, but %s could not be read: not loaded", installedPath)
	}
	return nil, []PluginProblem{{Plugin: id, Path: src.Path, Message: why}}
}

// recordApplies reports whether an installation applies to the settings'
// project: user and managed installs everywhere, project and local ones
// where their projectPath is the project or in its repository.
func (s *Settings) recordApplies(rec installRecord) bool {
	switch rec.Scope {
	case "user", "managed", "":
		return true
	}
	if rec.ProjectPath == "" || s.root == "" {
		return false
	}
	if filepath.Clean(rec.ProjectPath) == s.root {
		return true
	}
	a, _ := gitRoots(s.root)
	b, _ := gitRoots(filepath.Clean(rec.ProjectPath))
	return a != "" && a == b
}

// marketEntry is a plugin's entry in its marketplace's catalog.
type marketEntry struct {
	// Path is the catalog file.
	Path string
	// Raw is the entry, which stands for the plugin's manifest when the
	// plugin has none (readPlugin).
	Raw json.RawMessage
	// Source is the entry's "source"; Root the catalog's
	// metadata.pluginRoot.
	Source json.RawMessage
	Root   string
	// Loc is the marketplace's folder.
	Loc string
	// Bad is why the catalog could not be read ("" when it was).
	Bad string
}

// catalogEntry returns the entry of the plugin name in the catalog of the
// marketplace at loc (nil when the catalog is missing or does not list
// it; Bad set when it does not parse).
func catalogEntry(loc, name string) *marketEntry {
	if loc == "" || !filepath.IsAbs(loc) {
		return nil
	}
	path := filepath.Join(loc, MarketplaceManifest)
	data, err := readConfigFile(path)
	if err != nil {
		return nil
	}
	var cat struct {
		Metadata struct {
			PluginRoot string `json:"pluginRoot"`
		} `json:"metadata"`
		Plugins []json.RawMessage `json:"plugins"`
	}
	if err := json.Unmarshal(data, &cat); err != nil {
		return &marketEntry{Path: path, Loc: loc, Bad: fmt.Sprintf("%s does not parse (%v)", path, err)}
	}
	for _, raw := range cat.Plugins {
		var e struct {
			Name   string          `json:"name"`
			Source json.RawMessage `json:"source"`
		}
		if json.Unmarshal(raw, &e) != nil || e.Name != name {
			continue
		}
		return &marketEntry{Path: path, Raw: raw, Source: e.Source, Root: cat.Metadata.PluginRoot, Loc: loc}
	}
	return nil
}

// inPlace returns the folder of a marketplace's plugin when the source of
// its catalog entry e is a relative path inside the marketplace's folder,
// or why it cannot be used ("" and "" when it needs an install).
func inPlace(e *marketEntry) (string, string) {
	if e == nil {
		return "", ""
	}
	if e.Bad != "" {
		return "", e.Bad
	}
	var rel string
	if json.Unmarshal(e.Source, &rel) != nil {
		return "", "" // fetched from elsewhere: it needs an install
	}
	if !strings.HasPrefix(rel, "./") && !strings.HasPrefix(rel, "../") && e.Root != "" {
		rel = filepath.Join(e.Root, rel)
	}
	dir, ok := inside(e.Loc, rel)
	if !ok {
		return "", fmt.Sprintf("%s: the source %q of the plugin leaves the marketplace's folder: not loaded", e.Path, rel)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", "" // not there: it needs an install
	}
	return dir, ""
}

// inside joins the relative path rel to root and reports whether the
// result stays inside root (lexically: a link inside may lead out, as in
// Claude Code's plugins).
func inside(root, rel string) (string, bool) {
	if rel == "" || filepath.IsAbs(rel) {
		return "", false
	}
	p := filepath.Join(root, rel)
	r, err := filepath.Rel(root, p)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", false
	}
	return p, true
}

// ReadPlugin reads the plugin at dir as a directory of the "plugins"
// setting is read (Claude Code's --plugin-dir): named by its plugin.json,
// else after the directory; it has no id, source or data directory. A nil
// plugin did not load (the problems say why).
func ReadPlugin(dir string) (*Plugin, []PluginProblem) {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return readPlugin(dir, "", filepath.Base(dir), Source{}, "", nil)
}

// manifest is what tackle reads of a plugin.json.
type manifest struct {
	Name        string          `json:"-"`
	Version     string          `json:"-"`
	Description string          `json:"-"`
	Skills      json.RawMessage `json:"skills"`
	Commands    json.RawMessage `json:"commands"`
	Agents      json.RawMessage `json:"agents"`
	Hooks       json.RawMessage `json:"hooks"`
	MCPServers  json.RawMessage `json:"mcpServers"`
}

// readPlugin reads the plugin at dir: its manifest (optional) and the
// parts it declares or has in their default places. fallback names it
// when the manifest does not. entry, when not nil, is the plugin's entry
// in its marketplace's catalog: a plugin without a plugin.json takes its
// manifest fields from there (name, version, description, skills,
// commands, agents, hooks, mcpServers), as Claude Code reads a
// marketplace's "strict": false plugins; a plugin with one is read from
// its plugin.json only.
func readPlugin(dir, id, fallback string, src Source, dataDir string, entry *marketEntry) (*Plugin, []PluginProblem) {
	p := &Plugin{ID: id, Name: fallback, Dir: dir, DataDir: dataDir, Source: src}
	label := id
	if label == "" {
		label = fallback
	}
	var probs []PluginProblem
	badPart := func(part string) func(path, format string, a ...any) {
		return func(path, format string, a ...any) {
			probs = append(probs, PluginProblem{Plugin: label, Part: part, Path: path, Message: fmt.Sprintf(format, a...)})
		}
	}
	bad, badHooks, badMCP := badPart(""), badPart(PartHooks), badPart(PartMCP)

	mpath := filepath.Join(dir, PluginManifest)
	var m manifest
	data, err := readConfigFile(mpath)
	if errors.Is(err, fs.ErrNotExist) && entry != nil && entry.Raw != nil {
		mpath, data, err = entry.Path, entry.Raw, nil
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// No manifest: the default places, named after the id or directory.
	case err != nil:
		bad(mpath, "the manifest cannot be read (%s): the plugin is not loaded", readReason(err))
		return nil, probs
	default:
		top, where, msg := pluginObject(mpath, data, "the manifest")
		if top == nil {
			bad(where, "%s: the plugin is not loaded", msg)
			return nil, probs
		}
		_ = json.Unmarshal(data, &m) // the raw fields, whatever their type
		str := func(key string, dst *string) {
			if v, ok := top[key]; ok && !isNull(v) && json.Unmarshal(v, dst) != nil {
				bad(mpath, "%q must be a string, found %s (ignored)", key, jsonKind(v))
			}
		}
		str("name", &m.Name)
		str("version", &m.Version)
		str("description", &m.Description)
		if m.Name != "" && !plainName(m.Name) {
			bad(mpath, `"name" %q must be letters, digits, ".", "_" and "-": the plugin is named %q`, m.Name, fallback)
			m.Name = ""
		}
	}
	if m.Name != "" {
		p.Name = m.Name
	}
	label = p.Label()
	p.Version, p.Description = m.Version, m.Description

	// Skills: skills/, and the manifest's, which add to it.
	p.Skills = []string{filepath.Join(dir, "skills")}
	for _, rel := range pathList(m.Skills, "skills", mpath, bad) {
		if d, ok := inside(dir, rel); ok {
			if !slices.Contains(p.Skills, d) {
				p.Skills = append(p.Skills, d)
			}
		} else {
			bad(mpath, "skills: %q leaves the plugin's directory (ignored)", rel)
		}
	}
	// Commands and agents: the manifest's replace the default directory.
	replaceable := func(raw json.RawMessage, key, def string) []string {
		if raw == nil || isNull(raw) {
			return []string{filepath.Join(dir, def)}
		}
		var out []string
		for _, rel := range pathList(raw, key, mpath, bad) {
			if d, ok := inside(dir, rel); ok {
				out = append(out, d)
			} else {
				bad(mpath, "%s: %q leaves the plugin's directory (ignored)", key, rel)
			}
		}
		return out
	}
	p.Commands = replaceable(m.Commands, "commands", "commands")
	p.Agents = replaceable(m.Agents, "agents", "agents")

	// Hooks: hooks/hooks.json ({"hooks": {...}}), then the manifest's.
	std := filepath.Join(dir, "hooks", "hooks.json")
	seen := map[string]bool{}
	hooksFile := func(path string, required bool) {
		if seen[path] {
			return
		}
		seen[path] = true
		data, err := readConfigFile(path)
		if err != nil {
			if required || !errors.Is(err, fs.ErrNotExist) {
				badHooks(path, "the hooks file cannot be read (%s): its hooks are not loaded", readReason(err))
			}
			return
		}
		top, where, msg := pluginObject(path, data, "the hooks file")
		if top == nil {
			badHooks(where, "%s: its hooks are not loaded", msg)
			return
		}
		h, ok := top["hooks"]
		if !ok || isNull(h) {
			badHooks(path, `no "hooks" object (want {"hooks": {"PreToolUse": [...]}}): no hook loaded from it`)
			return
		}
		p.Hooks = append(p.Hooks, PluginFile{Path: path, Raw: h})
	}
	hooksFile(std, false)
	for _, v := range rawList(m.Hooks) {
		var rel string
		if json.Unmarshal(v, &rel) == nil {
			if d, ok := inside(dir, rel); ok {
				hooksFile(d, true)
			} else {
				badHooks(mpath, "hooks: %q leaves the plugin's directory (ignored)", rel)
			}
			continue
		}
		if len(bytes.TrimSpace(v)) > 0 && bytes.TrimSpace(v)[0] == '{' {
			p.Hooks = append(p.Hooks, PluginFile{Path: mpath, Raw: v})
			continue
		}
		badHooks(mpath, "hooks: want a path, a list of paths or an object of events, found %s (ignored)", jsonKind(v))
	}

	// MCP servers: .mcp.json ({"mcpServers": {...}} or the servers
	// themselves), then the manifest's; a later one wins for a name.
	mcpFile := func(path string, required bool) {
		data, err := readConfigFile(path)
		if err != nil {
			if required || !errors.Is(err, fs.ErrNotExist) {
				badMCP(path, "the MCP file cannot be read (%s): its servers are not loaded", readReason(err))
			}
			return
		}
		top, where, msg := pluginObject(path, data, "the MCP file")
		if top == nil {
			badMCP(where, "%s: its servers are not loaded", msg)
			return
		}
		servers := json.RawMessage(data)
		if s, ok := top["mcpServers"]; ok {
			servers = s
		}
		p.MCPServers = append(p.MCPServers, PluginFile{Path: path, Raw: servers})
	}
	mcpFile(filepath.Join(dir, ".mcp.json"), false)
	for _, v := range rawList(m.MCPServers) {
		var rel string
		if json.Unmarshal(v, &rel) == nil {
			if d, ok := inside(dir, rel); ok {
				mcpFile(d, true)
			} else {
				badMCP(mpath, "mcpServers: %q leaves the plugin's directory (ignored)", rel)
			}
			continue
		}
		if len(bytes.TrimSpace(v)) > 0 && bytes.TrimSpace(v)[0] == '{' {
			p.MCPServers = append(p.MCPServers, PluginFile{Path: mpath, Raw: v})
			continue
		}
		badMCP(mpath, "mcpServers: want a path, a list of paths or an object of servers, found %s (ignored)", jsonKind(v))
	}
	return p, probs
}

// pluginObject decodes data, the file path, as a JSON object; when it is
// not one, the object is nil and where ("path:line:col") and msg say why.
func pluginObject(path string, data []byte, what string) (obj map[string]json.RawMessage, where, msg string) {
	if err := json.Unmarshal(data, &obj); err != nil {
		prob := problemOf(path, data, err)
		return nil, fmt.Sprintf("%s:%d:%d", path, prob.Line, prob.Column), prob.Message
	}
	if obj == nil {
		return nil, path, what + " must be a JSON object, found null"
	}
	return obj, "", ""
}

// rawList is a manifest field that may be one value or a list of them.
func rawList(raw json.RawMessage) []json.RawMessage {
	if raw == nil || isNull(raw) {
		return nil
	}
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '[' {
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) == nil {
			return list
		}
	}
	return []json.RawMessage{raw}
}

// pathList is a manifest field of paths: a string or a list of strings.
func pathList(raw json.RawMessage, key, mpath string, bad func(path, format string, a ...any)) []string {
	var out []string
	for _, v := range rawList(raw) {
		var s string
		if json.Unmarshal(v, &s) != nil {
			bad(mpath, "%s: want a path or a list of paths, found %s (ignored)", key, jsonKind(v))
			continue
		}
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
