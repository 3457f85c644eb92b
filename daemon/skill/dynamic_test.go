package skill_test

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tackle-agent/tackle/daemon/skill"
)

func TestTouchNested(t *testing.T) {
	tmp := t.TempDir()
	root := mkdir(t, tmp, "repo")
	mkdir(t, root, ".git")
	write(t, root, ".claude/skills/lint/SKILL.md", skillMD("root lint"))
	write(t, root, "pkg/api/.claude/skills/lint/SKILL.md", skillMD("api lint"))
	write(t, root, "pkg/api/.claude/skills/api-docs/SKILL.md", skillMD("api docs"))
	write(t, root, "pkg/web/.tackle/skills/lint/SKILL.md", skillMD("web lint"))
	write(t, root, "pkg/web/.tackle/skills/api-docs/SKILL.md", skillMD("web docs"))
	write(t, root, "pkg/api/handlers/h.go", "package handlers\n")
	write(t, root, "outside/.claude/skills/far/SKILL.md", skillMD("never"))
	write(t, root, "node_modules/pkg/.claude/skills/dep/SKILL.md", skillMD("a dependency's"))
	write(t, root, "node_modules/pkg/index.js", "module.exports = 1\n")

	c := skill.NewCatalog(&skill.Options{Builtin: emptyBuiltin})
	src := skill.Sources{Root: root, Cwd: root}
	d := skill.NewDynamic()
	names := func() []string { return summary(c.View(src, d, nil).All()) }

	if diff := cmp.Diff([]string{"lint project root lint"}, names()); diff != "" {
		t.Fatalf("before (-want +got):\n%s", diff)
	}
	steps := []struct {
		name    string
		touch   []string
		changed bool
		want    []string
	}{
		{"a file outside the cwd", []string{filepath.Join(tmp, "elsewhere", "x.go")}, false, []string{"lint project root lint"}},
		{"a file in the cwd itself", []string{"README.md"}, false, []string{"lint project root lint"}},
		{"a dependency's file (node_modules)", []string{"node_modules/pkg/index.js"}, false, []string{"lint project root lint"}},
		{"read below api (relative path)", []string{"pkg/api/handlers/h.go"}, true, []string{
			"api-docs nested api docs", "api:lint nested api lint", "lint project root lint"}},
		{"again: nothing new", []string{filepath.Join(root, "pkg/api/handlers/h.go")}, false, []string{
			"api-docs nested api docs", "api:lint nested api lint", "lint project root lint"}},
		{"write a new file below web", []string{filepath.Join(root, "pkg/web/new/file.ts")}, true, []string{
			"api-docs nested api docs", "api:lint nested api lint", "lint project root lint",
			"web:api-docs nested web docs", "web:lint nested web lint"}},
	}
	for _, st := range steps {
		if got := d.Touch(c, src, st.touch); got != st.changed {
			t.Errorf("%s: Touch = %v, want %v", st.name, got, st.changed)
		}
		if diff := cmp.Diff(st.want, names()); diff != "" {
			t.Errorf("%s (-want +got):\n%s", st.name, diff)
		}
	}
	if diff := cmp.Diff([]string{filepath.Join(root, "pkg/api"), filepath.Join(root, "pkg/web")}, d.NestedDirs()); diff != "" {
		t.Errorf("nested dirs (-want +got):\n%s", diff)
	}
	// The dir:name skill keeps its own directory.
	v := c.View(src, d, nil)
	if sk, ok := v.Lookup("web:lint"); !ok || sk.Dir != filepath.Join(root, "pkg/web/.tackle/skills/lint") {
		t.Errorf("Lookup(web:lint) = %+v, %v", sk, ok)
	}
	// When the session's cwd moves into a nested dir, its skills are
	// project skills, read once.
	src2 := skill.Sources{Root: root, Cwd: filepath.Join(root, "pkg", "api")}
	v2 := c.View(src2, d, nil)
	var projectAPI int
	for _, sk := range append(v2.All(), v2.Shadowed()...) {
		if strings.Contains(sk.Path, filepath.Join("pkg", "api")) {
			projectAPI++
			if sk.Source != skill.SourceProject {
				t.Errorf("%s: source %s", sk.Name, sk.Source)
			}
		}
	}
	if projectAPI != 2 {
		t.Errorf("api skills seen %d times, want 2", projectAPI)
	}
}

func TestPathsActivation(t *testing.T) {
	root := t.TempDir()
	mkdir(t, root, ".git")
	write(t, root, ".claude/skills/go-style/SKILL.md", "---\ndescription: Go style\npaths: [\"src/**/*.go\"]\n---\nUse gofmt.\n")
	write(t, root, ".claude/skills/yaml/SKILL.md", "---\ndescription: YAML\npaths: \"*.{yml,yaml}\"\n---\nTwo spaces.\n")
	write(t, root, ".claude/skills/docs/SKILL.md", "---\ndescription: Docs\npaths:\n  - docs/\n---\nWrite well.\n")
	write(t, root, ".claude/skills/always/SKILL.md", skillMD("always on"))
	c := skill.NewCatalog(&skill.Options{Builtin: emptyBuiltin})
	src := skill.Sources{Root: root, Cwd: filepath.Join(root, "src")}
	mkdir(t, root, "src")
	d := skill.NewDynamic()

	active := func() []string {
		v := c.View(src, d, nil)
		var out []string
		for _, sk := range v.All() {
			if v.Active(sk.Name) {
				out = append(out, sk.Name)
			}
			if _, ok := v.Lookup(sk.Name); ok != v.Active(sk.Name) {
				t.Errorf("Lookup(%s) = %v, Active = %v", sk.Name, ok, v.Active(sk.Name))
			}
		}
		return out
	}
	steps := []struct {
		touch   []string
		changed bool
		want    []string
	}{
		{nil, false, []string{"always"}},
		{[]string{"notes.txt"}, false, []string{"always"}},
		{[]string{filepath.Join(root, "main.go")}, false, []string{"always"}}, // not below src/
		{[]string{"pkg/a/b.go"}, true, []string{"always", "go-style"}},        // relative to the cwd: src/pkg/a/b.go
		{[]string{filepath.Join(root, "deploy", "ci.yaml"), filepath.Join(root, "docs", "x", "guide.md")}, true, []string{"always", "docs", "go-style", "yaml"}},
		{[]string{"pkg/a/b.go"}, false, []string{"always", "docs", "go-style", "yaml"}},
	}
	for i, st := range steps {
		if got := d.Touch(c, src, st.touch); got != st.changed {
			t.Errorf("step %d: Touch(%v) = %v, want %v", i, st.touch, got, st.changed)
		}
		if diff := cmp.Diff(st.want, active()); diff != "" {
			t.Errorf("step %d: active (-want +got):\n%s", i, diff)
		}
	}
}

func TestMatchPaths(t *testing.T) {
	tests := []struct {
		globs []string
		rel   string
		want  bool
	}{
		{[]string{"src/**/*.ts"}, "src/a/b/c.ts", true},
		{[]string{"src/**/*.ts"}, "src/c.ts", true},
		{[]string{"src/**/*.ts"}, "lib/c.ts", false},
		{[]string{"*.go"}, "deep/down/main.go", true},
		{[]string{"./cmd/*.go"}, "cmd/main.go", true},
		{[]string{"docs"}, "docs/a/b.md", true},
		{[]string{"docs/"}, "docs/a.md", true},
		{[]string{"docs/"}, "documents/a.md", false},
		{[]string{"*.{yml,yaml}"}, "x/ci.yml", true},
		{[]string{"[unclosed"}, "x", false},
		{[]string{"", "Makefile"}, "Makefile", true},
	}
	for _, tt := range tests {
		if got := skill.MatchPaths(tt.globs, tt.rel); got != tt.want {
			t.Errorf("MatchPaths(%q, %q) = %v, want %v", tt.globs, tt.rel, got, tt.want)
		}
	}
}

// TestDynamicConcurrent: Touch and View from many goroutines (run with -race).
func TestDynamicConcurrent(t *testing.T) {
	root := t.TempDir()
	mkdir(t, root, ".git")
	for _, d := range []string{"a", "b", "c", "d"} {
		write(t, root, d+"/.claude/skills/s/SKILL.md", "---\ndescription: nested "+d+"\npaths: [\""+d+"/**\"]\n---\nx\n")
	}
	c := skill.NewCatalog(&skill.Options{Builtin: emptyBuiltin})
	src := skill.Sources{Root: root, Cwd: root}
	d := skill.NewDynamic()
	var wg sync.WaitGroup
	for _, dir := range []string{"a", "b", "c", "d"} {
		wg.Add(2)
		go func() { defer wg.Done(); d.Touch(c, src, []string{dir + "/x/y.txt"}) }()
		go func() { defer wg.Done(); c.View(src, d, nil) }()
	}
	wg.Wait()
	d.Touch(c, src, []string{"a/1", "b/1", "c/1", "d/1"}) // the nested skills' own paths now match
	v := c.View(src, d, nil)
	if len(v.All()) != 4 {
		t.Fatalf("skills %v", summary(v.All()))
	}
	for _, sk := range v.All() {
		if !v.Active(sk.Name) {
			t.Errorf("%s is not active", sk.Name)
		}
	}
}

func TestViewPrompts(t *testing.T) {
	root := t.TempDir()
	write(t, root, ".claude/skills/mcp__srv__taken/SKILL.md", skillMD("a file skill"))
	c := skill.NewCatalog(&skill.Options{Builtin: emptyBuiltin})
	prompts := []*skill.Skill{
		{Name: "mcp__srv__greet", Description: "Greets", Source: skill.SourceMCP, UserInvocable: true,
			Prompt: &skill.PromptRef{Server: "srv", Name: "greet", Args: []skill.PromptArg{{Name: "who", Required: true}}}},
		{Name: "mcp__srv__taken", Description: "loses", Source: skill.SourceMCP, UserInvocable: true, Prompt: &skill.PromptRef{Server: "srv", Name: "taken"}},
	}
	v := c.View(skill.Sources{Root: root, Cwd: root}, nil, prompts)
	if diff := cmp.Diff([]string{"mcp__srv__greet mcp Greets", "mcp__srv__taken project a file skill"}, summary(v.All())); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"mcp__srv__taken mcp loses"}, summary(v.Shadowed())); diff != "" {
		t.Errorf("shadowed (-want +got):\n%s", diff)
	}
	if len(v.ModelSkills()) != 1 || len(v.UserSkills()) != 2 {
		t.Errorf("model %v user %v", summary(v.ModelSkills()), summary(v.UserSkills()))
	}
}
