package skill_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tackle-agent/tackle/daemon/skill"
	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/daemon/tool/tooltest"
)

// compatProject copies testdata/compat into a temporary repository:
// dot-claude as the project's .claude, home-claude as the home's .claude,
// and adds a dangling symlink to the project's skills directory. It
// returns the sources of a session there.
func compatProject(t *testing.T) skill.Sources {
	t.Helper()
	tmp := t.TempDir()
	proj, home := filepath.Join(tmp, "proj"), filepath.Join(tmp, "home")
	mkdir(t, proj, ".git")
	copyTree(t, filepath.Join("testdata", "compat", "dot-claude"), filepath.Join(proj, ".claude"))
	copyTree(t, filepath.Join("testdata", "compat", "home-claude"), filepath.Join(home, ".claude"))
	// A skill linked from a checkout that is not there (seen in repositories
	// that link shared skills from a sibling directory).
	symlink(t, filepath.Join("..", "..", "..", "shared-skills", "linked"), filepath.Join(proj, ".claude", "skills", "linked"))
	return skill.Sources{Root: proj, Cwd: proj, Home: home}
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		write(t, to, filepath.ToSlash(rel), string(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func compatSet(t *testing.T) (*skill.Set, skill.Sources) {
	t.Helper()
	src := compatProject(t)
	return skill.NewCatalog(&skill.Options{Builtin: emptyBuiltin}).Static(src), src
}

// TestStaticArgumentHintCommands: command files with an unquoted
// argument-hint load, the hint kept as text, with a warning.
func TestStaticArgumentHintCommands(t *testing.T) {
	set, _ := compatSet(t)
	for _, tt := range []struct{ name, hint, warning string }{
		{"review-pr", "[pr-number] [priority] [assignee]", `argument-hint: [pr-number] [priority] [assignee] is read as the text "[pr-number] [priority] [assignee]"`},
		{"commit", "[message]", `argument-hint: [message] is read as the text "[message]"`},
		{"review", "[dir]", `argument-hint: [dir] is read as the text "[dir]"`},
	} {
		sk, ok := set.Lookup(tt.name)
		if !ok {
			t.Errorf("%s did not load; problems: %v", tt.name, set.Problems)
			continue
		}
		if sk.ArgumentHint != tt.hint {
			t.Errorf("%s: argument hint %q, want %q", tt.name, sk.ArgumentHint, tt.hint)
		}
		if len(sk.Warnings) != 1 || !strings.Contains(sk.Warnings[0], tt.warning) {
			t.Errorf("%s: warnings %q, want one containing %q", tt.name, sk.Warnings, tt.warning)
		}
	}
	if sk, ok := set.Lookup("review-pr"); ok && strings.Join(sk.AllowedTools, " ") != "Bash(gh pr view:*) Bash(gh pr diff:*)" {
		t.Errorf("review-pr: the rest of the frontmatter is lost: allowed-tools %q", sk.AllowedTools)
	}
}

// TestStaticNestedCommands: commands in subdirectories (at any depth) are
// named after the file, the directory shown in the description. Of two
// files of one name, the first by depth then path (be/ before fe/) keeps
// it and the other is "dir:name" with a warning; a nested command whose
// name a skill has is "dir:name" too.
func TestStaticNestedCommands(t *testing.T) {
	set, src := compatSet(t)
	cmds := filepath.Join(src.Root, ".claude", "commands")
	want := map[string]string{
		"component":    "command " + filepath.Join(cmds, "be", "component.md") + " Create a service component (project:be)",
		"fe:component": "command " + filepath.Join(cmds, "fe", "component.md") + " Create a React component (project:fe)",
		"c":            "command " + filepath.Join(cmds, "a", "b", "c.md") + " A command three directories down. (project:a:b)",
		"api":          "command " + filepath.Join(src.Home, ".claude", "commands", "backend", "api.md") + " Design an API endpoint (user:backend)",
		"deploy":       "project " + filepath.Join(src.Root, ".claude", "skills", "deploy", "SKILL.md") + " Deploys the application to an environment.",
		"ops:deploy":   "command " + filepath.Join(cmds, "ops", "deploy.md") + " Deploy by hand (the deploy skill does it better) (project:ops)",
	}
	got := map[string]string{}
	for name := range want {
		if sk, ok := set.Lookup(name); ok {
			got[name] = sk.Source + " " + sk.Path + " " + sk.Description
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("nested commands (-want +got):\n%s", diff)
	}
	for _, name := range []string{"be:component", "a:b:c", "b:c", "backend:api"} {
		if _, ok := set.Lookup(name); ok {
			t.Errorf("%s: a name with its directories is given only on a clash", name)
		}
	}
	if len(set.Shadowed) != 0 {
		t.Errorf("shadowed: %v (a clash keeps both)", summary(set.Shadowed))
	}
	warnings := map[string][]string{}
	for _, sk := range set.Skills {
		for _, w := range sk.Warnings {
			if strings.Contains(w, "is taken by") {
				warnings[sk.Name] = append(warnings[sk.Name], w)
			}
		}
	}
	wantWarnings := map[string][]string{
		"fe:component": {`the command name "component" is taken by the command ` + filepath.Join(cmds, "be", "component.md") +
			`: this command is named "fe:component" (rename the file to have both under plain names)`},
		"ops:deploy": {`the command name "deploy" is taken by the project skill ` + filepath.Join(src.Root, ".claude", "skills", "deploy", "SKILL.md") +
			`: this command is named "ops:deploy" (rename the file to have both under plain names)`},
	}
	if diff := cmp.Diff(wantWarnings, warnings); diff != "" {
		t.Errorf("clash warnings (-want +got):\n%s", diff)
	}
}

// TestStaticNestedCommandOrder: the rule does not depend on the order the
// directory is read in: a file at the top keeps its name over nested ones,
// nested ones by depth then path, and a clash of alternative names is
// shadowed.
func TestStaticNestedCommandOrder(t *testing.T) {
	tmp := t.TempDir()
	proj := filepath.Join(tmp, "proj")
	mkdir(t, proj, ".git")
	write(t, proj, ".claude/commands/z/x.md", "z/x\n")
	write(t, proj, ".claude/commands/a/b/x.md", "a/b/x\n")
	write(t, proj, ".claude/commands/x.md", "top x\n")
	write(t, proj, ".claude/commands/b/x.md", "b/x\n")
	write(t, proj, ".claude/commands/a:b/x.md", "a:b/x\n") // its alternative name is a/b/x.md's
	plugin := filepath.Join(tmp, "plug")
	write(t, plugin, "commands/sub/deep/x.md", "plugin x\n") // a plugin's commands keep their namespace
	set := skill.NewCatalog(&skill.Options{Builtin: emptyBuiltin}).Static(skill.Sources{Root: proj, Cwd: proj, Plugins: plugins(t, plugin)})
	want := []string{
		"a:b:x command a:b/x (project:a:b)", // one level: before a/b/x.md
		"b:x command b/x (project:b)",
		"plug:sub:deep:x plugin plugin x",
		"x command top x",
		"z:x command z/x (project:z)",
	}
	if diff := cmp.Diff(want, summary(set.Skills)); diff != "" {
		t.Errorf("skills (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"x command a/b/x (project:a:b)"}, summary(set.Shadowed)); diff != "" {
		t.Errorf("shadowed (-want +got):\n%s", diff)
	}
}

// TestStaticSkillsDirProblems: a flat name.md in a skills directory and a
// dangling symlink there are problems naming the file and why (and where
// the flat file belongs); README.md is not; every other skill loads.
func TestStaticSkillsDirProblems(t *testing.T) {
	set, src := compatSet(t)
	skills := filepath.Join(src.Root, ".claude", "skills")
	want := []string{
		filepath.Join(skills, "flat-skill.md") + ": a flat .md file in the skills directory is not loaded: a skill is a directory holding SKILL.md; move it to " +
			filepath.Join(skills, "flat-skill", "SKILL.md"),
		filepath.Join(skills, "linked") + `: the skill is a symlink to "` + filepath.Join("..", "..", "..", "shared-skills", "linked") + `", which does not exist: fix the link or remove it`,
	}
	var got []string
	for _, p := range set.Problems {
		got = append(got, p.Error())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	for _, name := range []string{"deploy", "review", "review-pr", "component"} {
		if _, ok := set.Lookup(name); !ok {
			t.Errorf("%s did not load", name)
		}
	}
	if _, ok := set.Lookup("flat-skill"); ok {
		t.Error("a flat skill file loaded: Claude Code does not load it")
	}

	// A SKILL.md directly in the skills directory, a symlink to a flat file
	// and a symlink loop.
	tmp := t.TempDir()
	write(t, tmp, "skills/SKILL.md", skillMD("no directory"))
	write(t, tmp, "elsewhere/notes.md", skillMD("notes"))
	symlink(t, filepath.Join(tmp, "elsewhere", "notes.md"), filepath.Join(tmp, "skills", "notes.md"))
	symlink(t, "loop", filepath.Join(tmp, "skills", "loop"))
	write(t, tmp, "skills/CHANGELOG.md", "# Changes\n")
	write(t, tmp, "skills/ok/SKILL.md", skillMD("ok"))
	set = skill.NewCatalog(&skill.Options{Builtin: emptyBuiltin}).Static(skill.Sources{ManagedDir: filepath.Join(tmp, "skills")})
	got = nil
	for _, p := range set.Problems {
		got = append(got, strings.TrimPrefix(p.Error(), filepath.Join(tmp, "skills")+string(filepath.Separator)))
	}
	want = []string{
		"SKILL.md: a SKILL.md directly in the skills directory is not loaded: a skill is a directory holding SKILL.md; move it to " + filepath.Join(tmp, "skills", "<skill-name>", "SKILL.md"),
		"loop: reading the skill directory: too many levels of symbolic links",
		"notes.md: a flat .md file in the skills directory is not loaded: a skill is a directory holding SKILL.md; move it to " + filepath.Join(tmp, "skills", "notes", "SKILL.md"),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ok managed ok"}, summary(set.Skills)); diff != "" {
		t.Errorf("skills (-want +got):\n%s", diff)
	}
}

// TestSlashCommandAlias: SlashCommand, Claude Code's tool for running a
// custom slash command, is an alias of Skill taking {command: "/name args"}.
func TestSlashCommandAlias(t *testing.T) {
	src := compatProject(t)
	c := skill.NewCatalog(&skill.Options{Builtin: emptyBuiltin})
	var used []string
	tl := skill.NewTool(&skill.ToolOptions{
		View: func(tool.Env) *skill.View { return c.View(src, nil, nil) },
		Used: func(_, name string) { used = append(used, name) },
	})
	if diff := cmp.Diff([]string{"SlashCommand"}, tl.Spec().Aliases); diff != "" {
		t.Errorf("aliases (-want +got):\n%s", diff)
	}
	reg := tool.NewRegistry()
	if err := reg.Register(tl); err != nil {
		t.Fatal(err)
	}
	if got, ok := reg.Lookup("SlashCommand"); !ok || got != tl {
		t.Fatalf("the registry does not resolve SlashCommand to the Skill tool")
	}
	e := env{id: "sess-1", cwd: src.Root}
	tools := map[string]tool.Tool{"Skill": tl, "SlashCommand": tl}
	ctx := context.Background()

	out := tooltest.Call(ctx, t, tools, e, "SlashCommand", map[string]string{"command": "/review src"}, nil)
	if out.Failed() {
		t.Fatalf("SlashCommand /review src: %s", out.Text())
	}
	want := "Base directory for this skill: " + filepath.Join(src.Root, ".claude", "skills", "review") + "\n\nReview the code in src.\n"
	if out.Text() != want {
		t.Errorf("text = %q, want %q", out.Text(), want)
	}
	if string(out.Res.Structured) != `{"commandName":"review","status":"inline","success":true}` || out.Access.Specifier != "review" {
		t.Errorf("structured %s, access %+v", out.Res.Structured, out.Access)
	}
	// No slash and spaces kept inside the arguments; args beside a bare
	// command; and Skill's own input through either name.
	for _, tt := range []struct {
		name string
		in   map[string]string
		want string
	}{
		{"SlashCommand", map[string]string{"command": "commit  fix the  build "}, "Commit the staged changes with the message: fix the  build\n"},
		{"SlashCommand", map[string]string{"command": "/review", "args": "lib"}, "Review the code in lib.\n"},
		{"SlashCommand", map[string]string{"skill": "review", "args": "pkg"}, "Review the code in pkg.\n"},
		{"Skill", map[string]string{"command": "/review docs"}, "Review the code in docs.\n"},
	} {
		out := tooltest.Call(ctx, t, tools, e, tt.name, tt.in, nil)
		if out.Failed() {
			t.Errorf("%s %v: %s", tt.name, tt.in, out.Text())
			continue
		}
		if got := out.Text(); !strings.HasSuffix(got, "\n\n"+tt.want) {
			t.Errorf("%s %v: text %q, want it to end with %q", tt.name, tt.in, got, tt.want)
		}
	}
	if diff := cmp.Diff([]string{"review", "commit", "review", "review", "review"}, used); diff != "" {
		t.Errorf("used (-want +got):\n%s", diff)
	}

	// The schema takes skill or command, not neither, not both; the tool
	// says what is wrong with the rest.
	for _, tt := range []struct {
		in        string
		schemaErr bool
		want      string
	}{
		{`{}`, true, ""},
		{`{"args": "x"}`, true, ""},
		{`{"skill": "review", "command": "/review"}`, true, ""},
		{`{"command": 7}`, true, ""},
		{`{"command": "  "}`, false, `command is empty: give "/<name> <args>"`},
		{`{"command": "/nope x"}`, false, `unknown skill "nope". Available skills: `},
		{`{"command": "/review a", "args": "b"}`, false, "the arguments are given twice"},
	} {
		var in any
		if err := json.Unmarshal([]byte(tt.in), &in); err != nil {
			t.Fatal(err)
		}
		out := tooltest.Call(ctx, t, tools, e, "SlashCommand", in, nil)
		switch {
		case tt.schemaErr && out.SchemaErr == nil:
			t.Errorf("%s: the schema accepts it", tt.in)
		case !tt.schemaErr && out.SchemaErr != nil:
			t.Errorf("%s: schema error %v", tt.in, out.SchemaErr)
		case !tt.schemaErr && (out.ValidateErr == nil || !strings.HasPrefix(out.ValidateErr.Error(), tt.want)):
			t.Errorf("%s: Validate = %v, want %q", tt.in, out.ValidateErr, tt.want)
		}
	}
	if res, _ := tl.Run(ctx, &tool.Call{Name: "SlashCommand", Input: json.RawMessage(`[1]`), Env: e}, nil); res == nil ||
		!strings.HasPrefix(resultText(res), `the input is not valid JSON for SlashCommand`) || !strings.Contains(resultText(res), `{"command": "/<name> <args>"}`) {
		t.Errorf("bad JSON through SlashCommand: %+v", res)
	}
}
