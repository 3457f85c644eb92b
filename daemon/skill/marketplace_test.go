package skill_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tackle-agent/tackle/daemon/config"
	"github.com/tackle-agent/tackle/daemon/skill"
)

// anthropicSkills is the licensed copy of Anthropic's skills repository's
// skills (../shared/testdata/skills-anthropic).
func anthropicSkills(t *testing.T) string {
	t.Helper()
	for _, dir := range []string{"/work/shared/testdata/skills-anthropic", "../../../shared/testdata/skills-anthropic"} {
		if _, err := os.Stat(dir); err == nil {
			abs, _ := filepath.Abs(dir)
			return abs
		}
	}
	t.Skip("no copy of Anthropic's skills")
	return ""
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Dir(path), filepath.Base(path), string(b)+"\n")
}

// A marketplace whose plugins share the repository as their source and
// have no plugin.json, each listing its skills in its catalog entry
// ("strict": false), as Anthropic's skills marketplace does (real skills
// from ../shared/testdata). Claude Code reads each such plugin's skills/
// as well as the skills its entry lists, so each plugin has every skill
// of the repository (anthropics/claude-code#21148, #53426): tackle does
// the same, reads each skill once, and takes the entry's description and
// the skills it lists outside skills/.
func TestPluginSharedSourceMarketplace(t *testing.T) {
	skills := anthropicSkills(t)
	home := t.TempDir()
	plugins := filepath.Join(home, ".claude", "plugins")
	repo := filepath.Join(t.TempDir(), "repo")
	copyTree(t, skills, filepath.Join(repo, "skills"))
	if err := os.Remove(filepath.Join(repo, "skills", "README.md")); err != nil {
		t.Fatal(err)
	}
	write(t, repo, "extras/deck/SKILL.md", "---\nname: deck\ndescription: Make a slide deck\n---\nMake the deck.\n")
	writeJSON(t, filepath.Join(repo, ".claude-plugin", "marketplace.json"), map[string]any{
		"name":     "example-agent-skills",
		"owner":    map[string]any{"name": "Example Owner"},
		"metadata": map[string]any{"description": "Example skills", "version": "1.0.0"},
		"plugins": []any{
			map[string]any{"name": "builder-skills", "description": "Skills that build things", "source": "./", "strict": false, "skills": []string{"./skills/mcp-builder", "./skills/skill-creator"}},
			map[string]any{"name": "design-skills", "description": "Skills that design things", "source": "./", "strict": false, "skills": []string{"./skills/canvas-design", "./extras/deck"}},
		},
	})
	market := filepath.Join(plugins, "marketplaces", "example-agent-skills")
	copyTree(t, repo, market)
	installs := map[string]any{}
	for _, name := range []string{"builder-skills", "design-skills"} {
		cache := filepath.Join(plugins, "cache", "example-agent-skills", name, "69c0b1a06741")
		copyTree(t, repo, cache)
		installs[name+"@example-agent-skills"] = []any{map[string]any{
			"scope": "user", "installPath": cache, "version": "69c0b1a06741",
			"installedAt": "2026-10-02T08:00:01.000Z", "lastUpdated": "2026-10-02T08:00:01.000Z", "gitCommitSha": "69c0b1a06741a1b2c3d4e5f60718293a4b5c6d7e",
		}}
	}
	writeJSON(t, filepath.Join(plugins, "known_marketplaces.json"), map[string]any{
		"example-agent-skills": map[string]any{"source": map[string]any{"source": "github", "repo": "example-org/agent-skills"}, "installLocation": market, "lastUpdated": "2026-10-02T08:00:00.000Z"},
	})
	writeJSON(t, filepath.Join(plugins, "installed_plugins.json"), map[string]any{"version": 2, "plugins": installs})
	writeJSON(t, filepath.Join(home, ".claude", "settings.json"), map[string]any{"enabledPlugins": map[string]bool{"builder-skills@example-agent-skills": true, "design-skills@example-agent-skills": true}})

	st, _ := config.NewLoader(&config.Options{Home: home, ConfigHome: filepath.Join(home, ".config", "tackle")}).Load("")
	ps, probs := st.Plugins()
	if len(probs) > 0 || len(ps) != 2 {
		t.Fatalf("plugins %+v, problems %v", ps, probs)
	}
	if ps[0].Name != "builder-skills" || ps[0].Description != "Skills that build things" || ps[0].Version != "69c0b1a06741" {
		t.Errorf("builder-skills: name %q, description %q, version %q", ps[0].Name, ps[0].Description, ps[0].Version)
	}
	set := skill.NewCatalog(&skill.Options{Builtin: emptyBuiltin}).Static(skill.Sources{Plugins: ps})
	if len(set.Problems) > 0 {
		t.Fatalf("problems: %v", set.Problems)
	}
	entries, err := os.ReadDir(skills)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, plugin := range []string{"builder-skills", "design-skills"} {
		for _, e := range entries {
			if e.IsDir() {
				want = append(want, plugin+":"+e.Name())
			}
		}
	}
	want = append(want, "design-skills:deck")
	slices.Sort(want)
	var got []string
	for _, sk := range set.Skills {
		got = append(got, sk.Name)
		if len(sk.Warnings) > 0 {
			t.Errorf("%s: %q", sk.Name, sk.Warnings)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("skills (-want +got):\n%s", diff)
	}
	if len(set.Shadowed) > 0 {
		t.Errorf("shadowed (read twice): %q", summary(set.Shadowed))
	}
}
