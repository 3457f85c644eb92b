package config

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// CopyPluginFixture copies testdata/claude-plugins (Claude Code's plugin
// files in the shapes it writes them) to a new temporary directory,
// replacing @PLUGINS@ with the copy's home/.claude/plugins, and returns
// the copy. File modes are kept (the hook script is executable).
func copyPluginFixture(t *testing.T) string {
	t.Helper()
	t.Setenv("CLAUDE_CODE_PLUGIN_CACHE_DIR", "")
	dst := t.TempDir()
	src := filepath.Join("testdata", "claude-plugins")
	plugins := filepath.Join(dst, "home", ".claude", "plugins")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		b = []byte(strings.ReplaceAll(string(b), "@PLUGINS@", plugins))
		return os.WriteFile(out, b, fi.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// pluginEnv is a loader over a copy of the fixture: home is its home,
// project its project (untrusted unless trusted).
type pluginEnv struct {
	root, home, project, plugins string
	trust                        *Trust
	l                            *Loader
}

func newPluginEnv(t *testing.T) *pluginEnv {
	t.Helper()
	root := copyPluginFixture(t)
	e := &pluginEnv{root: root, home: filepath.Join(root, "home"), project: filepath.Join(root, "project")}
	e.plugins = filepath.Join(e.home, ".claude", "plugins")
	cfg := filepath.Join(root, "xdg")
	e.trust = NewTrust(cfg)
	e.l = NewLoader(&Options{Home: e.home, ConfigHome: cfg, ManagedPath: filepath.Join(root, "managed.json"), Trust: e.trust})
	return e
}

func (e *pluginEnv) cache(name, version string) string {
	return filepath.Join(e.plugins, "cache", "team-tools", name, version)
}

func pluginNames(ps []Plugin) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Label()+" "+p.Name)
	}
	return out
}

func problemTexts(ps []PluginProblem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Error())
	}
	return out
}

// The user's enabledPlugins turn plugins on through installed_plugins.json
// and known_marketplaces.json; each is named by its plugin.json, never by
// its directory (a version number in Claude Code's cache).
func TestPluginsEnabledByUser(t *testing.T) {
	e := newPluginEnv(t)
	st, probs := e.l.Load(e.project)
	if len(probs) > 0 {
		t.Fatalf("settings problems: %v", probs)
	}
	plugins, pprobs := st.Plugins()
	if diff := cmp.Diff([]string{"formatter@team-tools formatter", "scratchpad@team-tools scratchpad"}, pluginNames(plugins)); diff != "" {
		t.Errorf("plugins (-want +got):\n%s", diff)
	}
	user := filepath.Join(e.home, ".claude", "settings.json")
	installed := filepath.Join(e.plugins, InstalledPluginsFile)
	wantProbs := []string{
		user + ": plugin ghost@team-tools: enabled here, but installed for other projects only (" + installed + "): not loaded (claude plugin install ghost@team-tools --scope project, here)",
		user + `: plugin orphan@unknown-market: enabled here, but its marketplace "unknown-market" is not registered in ` + filepath.Join(e.plugins, KnownMarketplacesFile) + ": not loaded (claude plugin marketplace add registers it)",
	}
	if diff := cmp.Diff(wantProbs, problemTexts(pprobs)); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}

	f := plugins[0]
	dir := e.cache("formatter", "1.2.0")
	want := Plugin{
		ID: "formatter@team-tools", Name: "formatter", Dir: dir,
		DataDir: filepath.Join(e.plugins, "data", "formatter-team-tools"),
		Version: "1.2.0", Description: "Formats code after every edit and reviews style",
		Source:   Source{Scope: ScopeUser, Path: user},
		Skills:   []string{filepath.Join(dir, "skills")},
		Commands: []string{filepath.Join(dir, "commands")},
		Agents:   []string{filepath.Join(dir, "agents")},
	}
	got := f
	got.Hooks, got.MCPServers = nil, nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("formatter (-want +got):\n%s", diff)
	}
	if len(f.Hooks) != 1 || f.Hooks[0].Path != filepath.Join(dir, "hooks", "hooks.json") || !strings.Contains(string(f.Hooks[0].Raw), `"PostToolUse"`) {
		t.Errorf("formatter hooks: %+v", f.Hooks)
	}
	if len(f.MCPServers) != 1 || f.MCPServers[0].Path != filepath.Join(dir, ".mcp.json") {
		t.Errorf("formatter MCP servers: %+v", f.MCPServers)
	}
	// Without a manifest or an install record: read in place from the
	// marketplace, named after the id, described by its catalog entry.
	if s := plugins[1]; s.Dir != filepath.Join(e.plugins, "marketplaces", "team-tools", "plugins", "scratchpad") || s.Version != "" || s.Description != "Keeps notes" {
		t.Errorf("scratchpad: %+v", s)
	}
}

// A plugin without a plugin.json takes its manifest from its catalog
// entry (a marketplace's "strict": false plugins): its paths, relative to
// the plugin, and its inline hooks and MCP servers. A plugin with a
// plugin.json is read from it alone.
func TestPluginsMarketplaceEntry(t *testing.T) {
	e := newPluginEnv(t)
	market := filepath.Join(e.plugins, "marketplaces", "team-tools")
	catalog := filepath.Join(market, MarketplaceManifest)
	write(t, catalog, `{
  "name": "team-tools",
  "owner": {"name": "Example Org Developer Tools"},
  "plugins": [
    {"name": "formatter", "source": "./plugins/formatter", "description": "not formatter's: it has a plugin.json", "commands": ["./nowhere"]},
    {
      "name": "scratchpad",
      "source": "./plugins/scratchpad",
      "strict": false,
      "version": "0.4.0",
      "description": "Keeps notes",
      "commands": ["./commands/note.md", "./more"],
      "hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo started"}]}]},
      "mcpServers": {"notes": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/notes"}}
    }
  ]
}
`)
	st, _ := e.l.Load(e.project)
	plugins, probs := st.Plugins()
	for _, p := range probs {
		if p.Plugin != "ghost@team-tools" && p.Plugin != "orphan@unknown-market" {
			t.Errorf("problem: %v", p)
		}
	}
	if diff := cmp.Diff([]string{"formatter@team-tools formatter", "scratchpad@team-tools scratchpad"}, pluginNames(plugins)); diff != "" {
		t.Fatalf("plugins (-want +got):\n%s", diff)
	}
	if f := plugins[0]; f.Description != "Formats code after every edit and reviews style" || len(f.Commands) != 1 || f.Commands[0] != filepath.Join(e.cache("formatter", "1.2.0"), "commands") {
		t.Errorf("formatter read its catalog entry: %+v", f)
	}
	s := plugins[1]
	dir := filepath.Join(market, "plugins", "scratchpad")
	if s.Version != "0.4.0" || s.Description != "Keeps notes" {
		t.Errorf("scratchpad: version %q, description %q", s.Version, s.Description)
	}
	if diff := cmp.Diff([]string{filepath.Join(dir, "commands", "note.md"), filepath.Join(dir, "more")}, s.Commands); diff != "" {
		t.Errorf("scratchpad commands (-want +got):\n%s", diff)
	}
	if len(s.Hooks) != 1 || s.Hooks[0].Path != catalog || !strings.Contains(string(s.Hooks[0].Raw), "echo started") {
		t.Errorf("scratchpad hooks: %+v", s.Hooks)
	}
	servers, _ := e.l.MCPServers(e.project, nil, nil, false)
	if n, ok := byName(servers)["plugin:scratchpad:notes"]; !ok || n.Command != filepath.Join(dir, "bin", "notes") || n.Source != catalog+" [plugin scratchpad@team-tools]" {
		t.Errorf("scratchpad's server: %+v", n)
	}
}

// A repository's own enabledPlugins: untrusted, only its false entries
// apply (it may turn a plugin off, never on); trusted, it wins over the
// user's, and the local file over it.
func TestPluginsProjectLayers(t *testing.T) {
	e := newPluginEnv(t)
	st, _ := e.l.Load(e.project)
	project := filepath.Join(e.project, ".claude", "settings.json")
	if !slices.Contains(st.Ignored, "1 enabled plugin in "+project) {
		t.Errorf("ignored: %q", st.Ignored)
	}
	on, _ := st.EnabledPlugins()
	if on["reviewer@team-tools"] {
		t.Error("an untrusted project turned reviewer on")
	}

	write(t, project, `{"enabledPlugins": {"reviewer@team-tools": true, "formatter@team-tools": false}}`)
	st, _ = e.l.Load(e.project)
	plugins, _ := st.Plugins()
	if diff := cmp.Diff([]string{"scratchpad@team-tools scratchpad"}, pluginNames(plugins)); diff != "" {
		t.Errorf("untrusted project turning formatter off (-want +got):\n%s", diff)
	}

	if _, _, err := e.trust.Trust(e.project, false); err != nil {
		t.Fatal(err)
	}
	st, _ = e.l.Load(e.project)
	plugins, _ = st.Plugins()
	if diff := cmp.Diff([]string{"reviewer@team-tools reviewer", "scratchpad@team-tools scratchpad"}, pluginNames(plugins)); diff != "" {
		t.Errorf("trusted project (-want +got):\n%s", diff)
	}
	if r := plugins[0]; r.Source.Path != project || len(r.Hooks) != 1 || r.Hooks[0].Path != filepath.Join(e.cache("reviewer", "0.3.0"), PluginManifest) || len(r.MCPServers) != 1 {
		t.Errorf("reviewer: %+v", r)
	}

	write(t, filepath.Join(e.project, ".claude", "settings.local.json"), `{"enabledPlugins": {"reviewer@team-tools": false}}`)
	st, _ = e.l.Load(e.project)
	plugins, _ = st.Plugins()
	if diff := cmp.Diff([]string{"scratchpad@team-tools scratchpad"}, pluginNames(plugins)); diff != "" {
		t.Errorf("local false over project true (-want +got):\n%s", diff)
	}
}

// Installing or removing a plugin (installed_plugins.json) gives a new
// Settings; a registry file that does not parse is a problem and its last
// good version stays in force.
func TestPluginsRegistryChanges(t *testing.T) {
	e := newPluginEnv(t)
	st, _ := e.l.Load(e.project)
	installed := filepath.Join(e.plugins, InstalledPluginsFile)
	write(t, installed, "{\"version\": 2, \"plugins\": {\n")
	st2, _ := e.l.Load(e.project)
	if st2 == st {
		t.Fatal("a changed installed_plugins.json gave the same Settings")
	}
	plugins, probs := st2.Plugins()
	if diff := cmp.Diff([]string{"formatter@team-tools formatter", "scratchpad@team-tools scratchpad"}, pluginNames(plugins)); diff != "" {
		t.Errorf("plugins with a broken registry (-want +got):\n%s", diff)
	}
	if len(probs) == 0 || !strings.HasPrefix(probs[0].Error(), installed+": ") || !strings.Contains(probs[0].Message, "last good version") {
		t.Errorf("problems: %q", problemTexts(probs))
	}

	write(t, installed, `{"version": 2, "plugins": {}}`)
	st3, _ := e.l.Load(e.project)
	plugins, probs = st3.Plugins()
	if diff := cmp.Diff([]string{"scratchpad@team-tools scratchpad"}, pluginNames(plugins)); diff != "" {
		t.Errorf("plugins after the uninstall (-want +got):\n%s", diff)
	}
	if !slices.ContainsFunc(probs, func(p PluginProblem) bool {
		return p.Plugin == "formatter@team-tools" && strings.Contains(p.Message, "not installed")
	}) {
		t.Errorf("problems: %q", problemTexts(probs))
	}
}

// Version 1 of installed_plugins.json (one installation per id, user
// scope) still loads, as Claude Code converts it.
func TestPluginsRegistryVersion1(t *testing.T) {
	e := newPluginEnv(t)
	write(t, filepath.Join(e.plugins, InstalledPluginsFile), `{"version": 1, "plugins": {
  "formatter@team-tools": {"version": "1.2.0", "installedAt": "2025-10-09T12:00:00.000Z", "installPath": "`+e.cache("formatter", "1.2.0")+`"}
}}`)
	st, _ := e.l.Load(e.project)
	plugins, _ := st.Plugins()
	if len(plugins) == 0 || plugins[0].ID != "formatter@team-tools" || plugins[0].Dir != e.cache("formatter", "1.2.0") {
		t.Errorf("plugins: %+v", plugins)
	}
}

// A broken manifest leaves its plugin out and says why; the others load.
// A missing hooks file the manifest names is a hooks problem only.
func TestPluginsBrokenFiles(t *testing.T) {
	e := newPluginEnv(t)
	manifest := filepath.Join(e.cache("formatter", "1.2.0"), PluginManifest)
	write(t, manifest, "{\"name\": \"formatter\",\n  \"version\": 1.2\n  \"description\": \"x\"}\n")
	st, _ := e.l.Load(e.project)
	plugins, probs := st.Plugins()
	if diff := cmp.Diff([]string{"scratchpad@team-tools scratchpad"}, pluginNames(plugins)); diff != "" {
		t.Errorf("plugins (-want +got):\n%s", diff)
	}
	if !slices.Contains(problemTexts(probs), manifest+":3:3: plugin formatter@team-tools: invalid character '\"' after object key:value pair: the plugin is not loaded") {
		t.Errorf("problems: %q", problemTexts(probs))
	}

	write(t, manifest, `{"name": "formatter", "version": "1.2.0", "hooks": "./hooks/extra.json", "commands": ["./commands/fmt.md", "../../escape"], "skills": "./more-skills"}`)
	e.l.invalidate(filepath.Join(e.plugins, InstalledPluginsFile)) // a new Settings
	touch(t, filepath.Join(e.home, ".claude", "settings.json"))
	st, _ = e.l.Load(e.project)
	plugins, probs = st.Plugins()
	f := plugins[0]
	dir := e.cache("formatter", "1.2.0")
	if diff := cmp.Diff([]string{filepath.Join(dir, "commands", "fmt.md")}, f.Commands); diff != "" {
		t.Errorf("commands replace the default (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{filepath.Join(dir, "skills"), filepath.Join(dir, "more-skills")}, f.Skills); diff != "" {
		t.Errorf("skills add to the default (-want +got):\n%s", diff)
	}
	if len(f.Hooks) != 1 {
		t.Errorf("hooks: %+v", f.Hooks)
	}
	want := []string{
		manifest + `: plugin formatter@team-tools: commands: "../../escape" leaves the plugin's directory (ignored)`,
		filepath.Join(dir, "hooks", "extra.json") + ": plugin formatter@team-tools: the hooks file cannot be read (no such file or directory): its hooks are not loaded",
	}
	for _, w := range want {
		if !slices.Contains(problemTexts(probs), w) {
			t.Errorf("missing problem %q in %q", w, problemTexts(probs))
		}
	}
	for _, p := range probs {
		if strings.Contains(p.Path, "extra.json") && p.Part != PartHooks {
			t.Errorf("a hooks file problem is not a hooks problem: %+v", p)
		}
	}
}

// tackle's "plugins" setting: directories, named by their plugin.json
// (else the directory), merged over the layers.
func TestPluginsDirectories(t *testing.T) {
	e := newPluginEnv(t)
	dev := filepath.Join(e.home, "dev", "my-plugin")
	write(t, filepath.Join(dev, PluginManifest), `{"name": "my-tools"}`)
	write(t, filepath.Join(dev, "commands", "hello.md"), "Say hello.\n")
	write(t, filepath.Join(e.root, "xdg", "tackle", "settings.json"), `{"plugins": ["~/dev/my-plugin", "~/dev/missing"]}`)
	st, _ := e.l.Load(e.project)
	plugins, probs := st.Plugins()
	if diff := cmp.Diff([]string{"formatter@team-tools formatter", "scratchpad@team-tools scratchpad", "my-tools my-tools"}, pluginNames(plugins)); diff != "" {
		t.Errorf("plugins (-want +got):\n%s", diff)
	}
	if p := plugins[2]; p.Dir != dev || p.ID != "" || p.DataDir != filepath.Join(e.plugins, "data", "my-tools-inline") {
		t.Errorf("my-tools: %+v", p)
	}
	if !slices.ContainsFunc(problemTexts(probs), func(s string) bool {
		return strings.Contains(s, filepath.Join(e.home, "dev", "missing")+" is not a directory")
	}) {
		t.Errorf("problems: %q", problemTexts(probs))
	}
}

// A plugin's MCP servers are "plugin:<name>:<server>", scope plugin, with
// ${CLAUDE_PLUGIN_ROOT} and ${CLAUDE_PLUGIN_DATA} expanded and set in a
// stdio server's environment, whose data directory is made.
func TestPluginMCPServers(t *testing.T) {
	e := newPluginEnv(t)
	servers, probs := e.l.MCPServers(e.project, nil, nil, false)
	if len(probs) > 0 {
		t.Fatalf("problems: %v", probs)
	}
	dir := e.cache("formatter", "1.2.0")
	data := filepath.Join(e.plugins, "data", "formatter-team-tools")
	s, ok := byName(servers)["plugin:formatter:everything"]
	if !ok {
		t.Fatalf("servers: %+v", servers)
	}
	want := MCPServer{
		Name: "plugin:formatter:everything", Scope: ScopePlugin, Source: filepath.Join(dir, ".mcp.json") + " [plugin formatter@team-tools]",
		Type: "stdio", Command: filepath.Join(dir, "bin", "everything"), Args: []string{"stdio"},
		Env: map[string]string{"CLAUDE_PLUGIN_ROOT": dir, "CLAUDE_PLUGIN_DATA": data, "FORMATTER_CACHE": data + "/cache"},
	}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("server (-want +got):\n%s", diff)
	}
	if fi, err := os.Stat(data); err != nil || !fi.IsDir() {
		t.Errorf("the data directory of a stdio server was not made: %v", err)
	}

	// Trusted, the project turns reviewer on: its inline http server.
	if _, _, err := e.trust.Trust(e.project, false); err != nil {
		t.Fatal(err)
	}
	servers, _ = e.l.MCPServers(e.project, nil, nil, true)
	if r, ok := byName(servers)["plugin:reviewer:github"]; !ok || r.URL != "https://api.example.org/mcp" || r.Source != filepath.Join(e.cache("reviewer", "0.3.0"), PluginManifest)+" [plugin reviewer@team-tools]" {
		t.Errorf("reviewer's server: %+v", r)
	}
}

func touch(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	write(t, path, string(b)+"\n")
}
