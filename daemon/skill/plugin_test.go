package skill_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tackle-agent/tackle/daemon/config"
	"github.com/tackle-agent/tackle/daemon/skill"
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

// claudePlugin is a plugin of the config package's fixture of Claude
// Code's plugins directory.
func claudePlugin(rel string) string {
	return filepath.Join("..", "config", "testdata", "claude-plugins", "home", ".claude", "plugins", filepath.FromSlash(rel))
}

// A plugin's skills and commands are named after its plugin.json "name",
// not its directory (a version number in Claude Code's cache), nested
// commands with their folders; ${CLAUDE_PLUGIN_ROOT} in a plugin skill is
// its plugin's directory.
func TestPluginSkillsNamedByManifest(t *testing.T) {
	dir := claudePlugin("cache/team-tools/formatter/1.2.0")
	set := skill.NewCatalog(&skill.Options{Builtin: emptyBuiltin}).Static(skill.Sources{Plugins: plugins(t, dir)})
	if len(set.Problems) > 0 {
		t.Fatalf("problems: %v", set.Problems)
	}
	want := []string{
		"formatter:fmt plugin Format the files changed since the last commit",
		"formatter:format-code plugin Format source files with the project's formatter. Use when the user asks to format or tidy code.",
		"formatter:git:amend plugin Format, then amend the last commit",
	}
	if diff := cmp.Diff(want, summary(set.Skills)); diff != "" {
		t.Errorf("skills (-want +got):\n%s", diff)
	}
	sk, _ := set.Lookup("formatter:format-code")
	abs, _ := filepath.Abs(dir)
	if got := skill.Render(sk, "main.go", skill.Vars{}, nil); !strings.Contains(got, "Run the formatter from "+abs+"/bin on the files named: main.go") {
		t.Errorf("rendered: %q", got)
	}
	// Without a manifest the directory names it.
	set = skill.NewCatalog(&skill.Options{Builtin: emptyBuiltin}).Static(skill.Sources{Plugins: plugins(t, claudePlugin("marketplaces/team-tools/plugins/scratchpad"))})
	if diff := cmp.Diff([]string{"scratchpad:note plugin Append a note to the scratchpad"}, summary(set.Skills)); diff != "" {
		t.Errorf("skills (-want +got):\n%s", diff)
	}
}

// The manifest's "commands" replace commands/ (files or directories) and
// its "skills" add to skills/; a skills path that is a skill itself is
// named after its frontmatter name.
func TestPluginManifestPaths(t *testing.T) {
	tmp := t.TempDir()
	plug := filepath.Join(tmp, "1.0.0")
	write(t, plug, ".claude-plugin/plugin.json", `{"name": "deploy-kit", "commands": ["./cmds/ship.md", "./more"], "skills": ["./extra", "./"]}`)
	write(t, plug, "SKILL.md", "---\nname: deploy-kit-overview\ndescription: what the kit does\n---\nOverview.\n")
	write(t, plug, "cmds/ship.md", "Ship it.\n")
	write(t, plug, "cmds/ignored.md", "Not listed.\n")
	write(t, plug, "more/roll/back.md", "Roll back.\n")
	write(t, plug, "commands/default.md", "Replaced by the manifest's.\n")
	write(t, plug, "skills/plan/SKILL.md", skillMD("plan a deploy"))
	write(t, plug, "extra/verify/SKILL.md", skillMD("verify a deploy"))
	set := skill.NewCatalog(&skill.Options{Builtin: emptyBuiltin}).Static(skill.Sources{Plugins: plugins(t, plug)})
	want := []string{
		"deploy-kit:deploy-kit-overview plugin what the kit does",
		"deploy-kit:plan plugin plan a deploy",
		"deploy-kit:roll:back plugin Roll back.",
		"deploy-kit:ship plugin Ship it.",
		"deploy-kit:verify plugin verify a deploy",
	}
	if diff := cmp.Diff(want, summary(set.Skills)); diff != "" {
		t.Errorf("skills (-want +got):\n%s", diff)
	}
}

// ${CLAUDE_PLUGIN_DATA} in a plugin skill is its plugin's data directory,
// made when the skill names it; a plugin without one (and any other skill)
// keeps the placeholder as written.
func TestPluginSkillDataDir(t *testing.T) {
	tmp := t.TempDir()
	plug := filepath.Join(tmp, "notes")
	write(t, plug, "skills/jot/SKILL.md", "---\ndescription: jot a note\n---\nAppend to ${CLAUDE_PLUGIN_DATA}/notes.md; the plugin is ${CLAUDE_PLUGIN_ROOT}.\n")
	write(t, tmp, "proj/.claude/skills/other/SKILL.md", "---\ndescription: not a plugin's\n---\nKeep ${CLAUDE_PLUGIN_DATA} and ${CLAUDE_PLUGIN_ROOT}.\n")
	ps := plugins(t, plug)
	data := filepath.Join(tmp, "plugins", "data", "notes-inline")
	ps[0].DataDir = data
	proj := filepath.Join(tmp, "proj")
	set := skill.NewCatalog(&skill.Options{Builtin: emptyBuiltin}).Static(skill.Sources{Root: proj, Cwd: proj, Plugins: ps})
	sk, ok := set.Lookup("notes:jot")
	if !ok {
		t.Fatalf("no notes:jot in %q", summary(set.Skills))
	}
	if got, want := skill.Render(sk, "", skill.Vars{}, nil), "Append to "+data+"/notes.md; the plugin is "+plug+".\n"; got != want {
		t.Errorf("rendered %q, want %q", got, want)
	}
	if fi, err := os.Stat(data); err != nil || !fi.IsDir() {
		t.Errorf("the data directory was not made: %v", err)
	}
	other, _ := set.Lookup("other")
	if got := skill.Render(other, "", skill.Vars{}, nil); got != "Keep ${CLAUDE_PLUGIN_DATA} and ${CLAUDE_PLUGIN_ROOT}.\n" {
		t.Errorf("a project skill rendered %q", got)
	}
	ps[0].DataDir = ""
	set = skill.NewCatalog(&skill.Options{Builtin: emptyBuiltin}).Static(skill.Sources{Plugins: ps})
	sk, _ = set.Lookup("notes:jot")
	if got := skill.Render(sk, "", skill.Vars{}, nil); !strings.Contains(got, "Append to ${CLAUDE_PLUGIN_DATA}/notes.md") {
		t.Errorf("without a data directory: %q", got)
	}
}
