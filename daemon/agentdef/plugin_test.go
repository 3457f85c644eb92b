package agentdef_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tackle-agent/tackle/daemon/agentdef"
	"github.com/tackle-agent/tackle/daemon/config"
)

// plugins reads plugin directories as tackle's "plugins" setting does.
func plugins(t testing.TB, dirs ...string) []config.Plugin {
	t.Helper()
	var out []config.Plugin
	for _, d := range dirs {
		p, probs := config.ReadPlugin(d)
		if p == nil {
			t.Fatalf("plugin %s: %v", d, probs)
		}
		out = append(out, *p)
	}
	return out
}

// A plugin's agents are named after its plugin.json "name" (its directory
// in Claude Code's cache is a version number), and ${CLAUDE_PLUGIN_ROOT}
// in their prompt is its directory.
func TestPluginAgentsNamedByManifest(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "config", "testdata", "claude-plugins", "home", ".claude", "plugins", "cache", "team-tools", "formatter", "1.2.0"))
	if err != nil {
		t.Fatal(err)
	}
	set := agentdef.NewCatalog(noBuiltins).Load(agentdef.Sources{Plugins: plugins(t, dir)})
	if len(set.Problems) > 0 {
		t.Fatalf("problems: %v", set.Problems)
	}
	if diff := cmp.Diff([]string{"formatter:style-checker plugin Checks changed files against the style guide. Use after edits, before committing."}, summary(set.Agents)); diff != "" {
		t.Errorf("agents (-want +got):\n%s", diff)
	}
	d := set.Agents[0]
	want := "You check code style. The style guide is " + dir + "/STYLE.md.\nReport each violation as file:line and the rule it breaks."
	if d.Prompt != want || d.Model != "haiku" {
		t.Errorf("style-checker: model %q, prompt %q", d.Model, d.Prompt)
	}
}

// The manifest's "agents" (files or directories) replace agents/.
func TestPluginManifestAgents(t *testing.T) {
	tmp := t.TempDir()
	plug := filepath.Join(tmp, "0.9.1")
	write(t, plug, ".claude-plugin/plugin.json", `{"name": "qa", "agents": ["./custom/tester.md", "./team"]}`)
	write(t, plug, "custom/tester.md", agentMD("tester", "runs the tests"))
	write(t, plug, "custom/unlisted.md", agentMD("unlisted", "not in the manifest"))
	write(t, plug, "team/lead/reviewer.md", agentMD("reviewer", "reviews"))
	write(t, plug, "agents/default.md", agentMD("default", "replaced by the manifest's"))
	src := agentdef.Sources{Plugins: plugins(t, plug)}
	set := agentdef.NewCatalog(noBuiltins).Load(src)
	if len(set.Problems) > 0 {
		t.Fatalf("problems: %v", set.Problems)
	}
	if diff := cmp.Diff([]string{"qa:lead:reviewer plugin reviews", "qa:tester plugin runs the tests"}, summary(set.Agents)); diff != "" {
		t.Errorf("agents (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{filepath.Join(plug, "custom", "tester.md"), filepath.Join(plug, "team")}, agentdef.AgentsDirs(src)); diff != "" {
		t.Errorf("AgentsDirs (-want +got):\n%s", diff)
	}
}

// ${CLAUDE_PLUGIN_DATA} in a plugin agent's prompt is its plugin's data
// directory, made when the prompt names it.
func TestPluginAgentDataDir(t *testing.T) {
	tmp := t.TempDir()
	plug := filepath.Join(tmp, "memo")
	write(t, plug, "agents/keeper.md", agentMD("keeper", "keeps notes")+"Notes live in ${CLAUDE_PLUGIN_DATA}; tools in ${CLAUDE_PLUGIN_ROOT}/bin.\n")
	ps := plugins(t, plug)
	data := filepath.Join(tmp, "plugins", "data", "memo-inline")
	ps[0].DataDir = data
	set := agentdef.NewCatalog(noBuiltins).Load(agentdef.Sources{Plugins: ps})
	d, ok := set.Lookup("memo:keeper")
	if !ok {
		t.Fatalf("no memo:keeper in %q (%v)", summary(set.Agents), set.Problems)
	}
	if want := "Notes live in " + data + "; tools in " + plug + "/bin."; !strings.HasSuffix(d.Prompt, want) {
		t.Errorf("prompt %q, want it to end with %q", d.Prompt, want)
	}
	if fi, err := os.Stat(data); err != nil || !fi.IsDir() {
		t.Errorf("the data directory was not made: %v", err)
	}
}
