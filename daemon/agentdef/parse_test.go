package agentdef_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/goleak"

	"github.com/tackle-agent/tackle/daemon/agentdef"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// voltagentDir is the shared corpus when it is there, else the copy in
// testdata.
func voltagentDir(t testing.TB) string {
	if _, err := os.Stat("/work/shared/testdata/agents-voltagent"); err == nil {
		return "/work/shared/testdata/agents-voltagent"
	}
	return filepath.Join("testdata", "voltagent")
}

// problems formats problems as "line:col: message", with "[skipped] "
// before the message of one that skipped the file.
func problems(ps []agentdef.Problem) []string {
	var out []string
	for _, p := range ps {
		s := fmt.Sprintf("%d:%d: ", p.Line, p.Column)
		if p.Skipped {
			s += "[skipped] "
		}
		out = append(out, s+p.Message)
	}
	return out
}

// TestParseVoltagent: every file of the real corpus either parses, with
// no problem, into what its frontmatter says, or is reported with the
// place and the reason.
func TestParseVoltagent(t *testing.T) {
	dir := voltagentDir(t)
	models := map[string]string{
		"api-designer": "sonnet", "architect-reviewer": "", "code-reviewer": "", "debugger": "sonnet",
		"error-detective": "sonnet", "golang-pro": "sonnet", "kubernetes-specialist": "sonnet", "python-pro": "sonnet",
		"security-engineer": "", "sql-pro": "sonnet", "terraform-engineer": "sonnet", "typescript-pro": "sonnet",
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	agents := 0
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		def, probs := agentdef.Parse(path, data)
		name := strings.TrimSuffix(e.Name(), ".md")
		model, isAgent := models[name]
		if !isAgent {
			// README.md and LICENSE: documentation beside the agents.
			want := []string{"1:1: [skipped] no frontmatter: an agent file starts with a --- line, then name and description; the file is skipped (taken for documentation)"}
			if def != nil || !cmp.Equal(want, problems(probs)) {
				t.Errorf("%s: %v, problems %q", e.Name(), def, problems(probs))
			}
			if probs[0].Path != path {
				t.Errorf("%s: problem path %q", e.Name(), probs[0].Path)
			}
			continue
		}
		agents++
		if def == nil || len(probs) > 0 {
			t.Errorf("%s: not loaded: %q", e.Name(), problems(probs))
			continue
		}
		want := &agentdef.Definition{
			Name: name, Model: model, Path: path,
			Tools: []string{"Read", "Write", "Edit", "Bash", "Glob", "Grep"},
		}
		opts := cmp.Options{cmpopts.IgnoreUnexported(agentdef.Definition{}), cmpopts.IgnoreFields(agentdef.Definition{}, "Description", "Prompt")}
		if diff := cmp.Diff(want, def, opts); diff != "" {
			t.Errorf("%s (-want +got):\n%s", e.Name(), diff)
		}
		if !strings.HasPrefix(def.Description, "Use ") || strings.Contains(def.Description, `"`) || len(def.Description) < 80 {
			t.Errorf("%s: description %q", e.Name(), def.Description)
		}
		if !strings.HasPrefix(def.Prompt, "You are a senior ") || strings.HasPrefix(def.Prompt, "\n") || len(def.Prompt) < 4000 {
			t.Errorf("%s: prompt starts %q (%d bytes)", e.Name(), def.Prompt[:min(40, len(def.Prompt))], len(def.Prompt))
		}
	}
	if agents != 12 {
		t.Errorf("%d agents in %s, want 12", agents, dir)
	}
}

func TestParseAllFields(t *testing.T) {
	src := "---\n" + `name: db-reader-2
description: >
  Runs read-only database queries.
  Use proactively for SQL questions.
tools: Read, Grep, Bash(psql -c *), Task(worker, researcher)
disallowedTools:
  - Write
  - mcp__github
model: inherit
permissionMode: manual
maxTurns: 12
skills: [sql-style, error-handling]
mcpServers:
  - github
  - playwright:
      type: stdio
      command: npx
      args: ["-y", "@playwright/mcp@latest"]
hooks:
  PreToolUse:
    - matcher: Bash
      hooks:
        - type: command
          command: ./scripts/validate-readonly-query.sh
memory: project
background: true
effort: high
isolation: worktree
color: Cyan
initialPrompt: Show the schema first.
omitClaudeMd: true
experimental:
  cacheTtl: 1h
---

You query the database.

Never write.
`
	src = "\uFEFF" + strings.ReplaceAll(src, "\n", "\r\n")
	def, probs := agentdef.Parse("/p/db.md", []byte(src))
	if len(probs) > 0 {
		t.Fatalf("problems: %q", problems(probs))
	}
	want := &agentdef.Definition{
		Name:            "db-reader-2",
		Description:     "Runs read-only database queries. Use proactively for SQL questions.",
		Tools:           []string{"Read", "Grep", "Bash(psql -c *)", "Task(worker, researcher)"},
		DisallowedTools: []string{"Write", "mcp__github"},
		PermissionMode:  agentdef.PermissionDefault,
		MaxTurns:        12,
		Skills:          []string{"sql-style", "error-handling"},
		MCPServers: []agentdef.MCPServer{
			{Name: "github"},
			{Name: "playwright", Config: map[string]any{"type": "stdio", "command": "npx", "args": []any{"-y", "@playwright/mcp@latest"}}},
		},
		Hooks: map[string]any{"PreToolUse": []any{map[string]any{
			"matcher": "Bash",
			"hooks":   []any{map[string]any{"type": "command", "command": "./scripts/validate-readonly-query.sh"}},
		}}},
		Memory: "project", Background: true, Effort: "high", Isolation: agentdef.IsolationWorktree, Color: "cyan",
		InitialPrompt: "Show the schema first.", OmitClaudeMd: true,
		Prompt: "You query the database.\n\nNever write.",
		Path:   "/p/db.md",
	}
	if diff := cmp.Diff(want, def, cmpopts.IgnoreUnexported(agentdef.Definition{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Bash(psql -c *)", "Agent(worker, researcher)"}, def.ToolRules()); diff != "" {
		t.Errorf("ToolRules (-want +got):\n%s", diff)
	}
	if def.AllTools() || !def.MCPServers[1].Inline() || def.MCPServers[0].Inline() {
		t.Errorf("AllTools %v, inline %v %v", def.AllTools(), def.MCPServers[0].Inline(), def.MCPServers[1].Inline())
	}
}

// agent is a file with this frontmatter (after name and description, which
// are on lines 2 and 3) and a body.
func agent(extra string) string {
	return "---\nname: a\ndescription: d\n" + extra + "---\nPrompt.\n"
}

func TestParseProblems(t *testing.T) {
	tests := []struct {
		name   string
		src    string
		loaded bool // the file still loads
		want   []string
	}{
		{"no frontmatter", "# Notes\n\nAbout our agents.\n", false,
			[]string{"1:1: [skipped] no frontmatter: an agent file starts with a --- line, then name and description; the file is skipped (taken for documentation)"}},
		{"frontmatter not on the first line", "\n---\nname: a\ndescription: d\n---\n", false,
			[]string{"1:1: [skipped] no frontmatter: an agent file starts with a --- line, then name and description; the file is skipped (taken for documentation)"}},
		{"never closed", "---\nname: a\ndescription: d\n", false,
			[]string{"1:1: [skipped] the frontmatter opened by --- on line 1 is never closed: add a line with only --- after it; the file is skipped"}},
		{"empty frontmatter", "---\n---\nBody.\n", false,
			[]string{"1:1: [skipped] no name in the frontmatter: the file is skipped (taken for documentation)"}},
		{"no name", "---\ndescription: d\ntools: Read\n---\n", false,
			[]string{"1:1: [skipped] no name in the frontmatter: the file is skipped (taken for documentation)"}},
		{"name starts with a hyphen", "---\nname: -x\ndescription: d\n---\n", false,
			[]string{`2:7: [skipped] name "-x" starts with "-": the file is skipped`}},
		{"name with a colon", "---\nname: \"my:agent\"\ndescription: d\n---\n", false,
			[]string{`2:7: [skipped] name "my:agent" contains ":", which is reserved for plugin agents: the file is skipped`}},
		{"name not lowercase", "---\nname: Code Reviewer_2\ndescription: d\n---\n", false,
			[]string{`2:7: [skipped] name "Code Reviewer_2" is not lowercase letters, digits and hyphens: the file is skipped (try "code-reviewer-2")`}},
		{"name too long", "---\nname: " + strings.Repeat("a", 257) + "\ndescription: d\n---\n", false,
			[]string{"2:7: [skipped] name is 257 characters, over the limit of 256: the file is skipped"}},
		{"name is a list", "---\nname: [a, b]\ndescription: d\n---\n", false,
			[]string{"2:1: [skipped] name: want text, got a list: the file is skipped"}},
		{"no description", "---\nname: helper\ntools: Read\n---\n", false,
			[]string{`2:7: [skipped] agent "helper" has no description, which says when to delegate to it: the file is skipped`}},
		{"empty description", "---\nname: helper\ndescription: \"  \"\n---\n", false,
			[]string{`2:7: [skipped] agent "helper" has no description, which says when to delegate to it: the file is skipped`}},
		{"unquoted colon", "---\nname: a\ndescription: Use this agent when: the tests fail\n---\n", false,
			[]string{`3:14: [skipped] the frontmatter is not valid YAML: mapping value is not allowed in this context (in "description: Use this agent when: the tests fail"); quote a value that contains ": "; the file is skipped`}},
		{"key given twice", "---\nname: a\ndescription: d\nname: b\n---\n", false,
			[]string{`4:1: [skipped] the frontmatter is not valid YAML: mapping key "name" already defined at [1:1] (in "name: b"); the file is skipped`}},
		{"a list", "---\n- name: a\n---\n", false,
			[]string{"2:1: [skipped] the frontmatter is a list, not `key: value` lines: the file is skipped"}},
		{"NUL byte", "---\nname: a\x00\n---\n", false,
			[]string{"0:0: [skipped] the file is not text (a NUL byte at offset 11): the file is skipped"}},
		{"alias bomb", "---\nname: a\ndescription: d\n" + bomb() + "---\n", false,
			[]string{"2:1: [skipped] the frontmatter is refused: its YAML aliases expand it to more than 1353 bytes; the file is skipped"}},

		// Limiting fields: a wrong value skips the file.
		{"unknown permission mode", agent("permissionMode: yolo\n"), false,
			[]string{`4:17: [skipped] permissionMode "yolo" is not one of default, acceptEdits, auto, dontAsk, bypassPermissions, plan or manual: the file is skipped`}},
		{"permission mode in the wrong case", agent("permissionMode: AcceptEdits\n"), false,
			[]string{`4:17: [skipped] permissionMode "AcceptEdits" is not one of default, acceptEdits, auto, dontAsk, bypassPermissions, plan or manual (spell it "acceptEdits"): the file is skipped`}},
		{"maxTurns zero", agent("maxTurns: 0\n"), false,
			[]string{"4:11: [skipped] maxTurns: want a positive whole number of turns, got 0: the file is skipped"}},
		{"maxTurns negative", agent("maxTurns: -3\n"), false,
			[]string{"4:11: [skipped] maxTurns: want a positive whole number of turns, got -3: the file is skipped"}},
		{"maxTurns fraction", agent("maxTurns: 2.5\n"), false,
			[]string{"4:11: [skipped] maxTurns: want a positive whole number of turns, got 2.5: the file is skipped"}},
		{"maxTurns words", agent("maxTurns: ten\n"), false,
			[]string{`4:11: [skipped] maxTurns: want a positive whole number of turns, got "ten": the file is skipped`}},
		{"isolation remote", agent("isolation: remote\n"), false,
			[]string{`4:12: [skipped] isolation "remote" is not "worktree" (the only isolation an agent file may ask for): the file is skipped`}},
		{"background maybe", agent("background: sometimes\n"), false,
			[]string{`4:13: [skipped] background: want true or false, got "sometimes": the file is skipped`}},
		{"tools empty list", agent("tools: []\n"), false,
			[]string{"4:8: [skipped] tools is empty: omit the field to give the agent every tool, or name the tools it may use; the file is skipped"}},
		{"tools empty string", agent("tools: \"\"\n"), false,
			[]string{"4:8: [skipped] tools is empty: omit the field to give the agent every tool, or name the tools it may use; the file is skipped"}},
		{"tools a mapping", agent("tools:\n  Read: true\n"), false,
			[]string{"4:1: [skipped] tools: want a list or a comma-separated string, got a mapping: the file is skipped"}},
		{"tools item a mapping", agent("tools:\n  - Read\n  - {Bash: git}\n"), false,
			[]string{"6:5: [skipped] tools: item 2 is a mapping, not a name: the file is skipped"}},
		{"disallowedTools unclosed", agent("disallowedTools: Bash(rm\n"), false,
			[]string{`4:18: [skipped] disallowedTools: "Bash(rm" is not a tool name or Tool(rule), so it would remove nothing: the file is skipped`}},
		{"misspelled disallowedTools", agent("disallowed-tools: Bash\n"), false,
			[]string{`4:1: [skipped] field "disallowed-tools" is not "disallowedTools": Claude Code would ignore it and give the agent more than it says; the file is skipped (spell it "disallowedTools")`}},
		{"allowed-tools", agent("allowed-tools: Read\n"), false,
			[]string{`4:1: [skipped] field "allowed-tools" is not "tools": Claude Code would ignore it and give the agent more than it says; the file is skipped (spell it "tools")`}},
		{"misspelled maxTurns", agent("max_turns: 5\n"), false,
			[]string{`4:1: [skipped] field "max_turns" is not "maxTurns": Claude Code would ignore it and give the agent more than it says; the file is skipped (spell it "maxTurns")`}},
		{"hooks unknown event", agent("hooks:\n  PreTooluse:\n    - matcher: Bash\n"), false,
			[]string{`4:1: [skipped] hooks: unknown event "PreTooluse", whose hooks would never run (events: PreToolUse, PermissionRequest, PermissionDenied, PostToolUse, PostToolUseFailure, PostToolBatch, Notification, SessionStart, SessionEnd, CwdChanged, ConfigChange, UserPromptSubmit, Stop, PreCompact, SubagentStart, SubagentStop): the file is skipped`}},
		{"hooks not a list", agent("hooks:\n  Stop: ./done.sh\n"), false,
			[]string{`4:1: [skipped] hooks.Stop: want a list of {matcher, hooks}, got a single value: the file is skipped`}},
		{"hooks a list", agent("hooks: [a]\n"), false,
			[]string{`4:1: [skipped] hooks: want a mapping of event to matchers (as in settings.json), got a list: the file is skipped`}},

		// Other fields: ignored, the file loads.
		{"bad color", agent("color: magenta\n"), true,
			[]string{`4:8: color "magenta" is not one of red, blue, green, yellow, purple, orange, pink, cyan: ignored`}},
		{"bad memory", agent("memory: global\n"), true,
			[]string{`4:9: memory "global" is not one of user, project, local: ignored`}},
		{"bad effort", agent("effort: extreme\n"), true,
			[]string{`4:9: effort "extreme" is not one of low, medium, high, xhigh, max: ignored`}},
		{"model a list", agent("model: [sonnet]\n"), true,
			[]string{"4:1: model: want text, got a list: ignored"}},
		{"omitClaudeMd maybe", agent("omitClaudeMd: 2\n"), true,
			[]string{"4:15: omitClaudeMd: want true or false, got 2: ignored"}},
		{"skills item a list", agent("skills:\n  - a\n  - [b]\n"), true,
			[]string{"6:5: skills: item 2 is a list, not a name: ignored"}},
		{"unknown field", agent("author: someone\nversion: 2\n"), true,
			[]string{`4:1: unknown field "author" (ignored)`, `5:1: unknown field "version" (ignored)`}},
		{"misspelled color", agent("Color: red\n"), true,
			[]string{`4:1: unknown field "Color" (ignored; spell it "color")`}},
		{"mcp__* in tools", agent("tools: Read, mcp__*\n"), true,
			[]string{"4:8: tools: mcp__* works only in disallowedTools and matches no tool here: name servers as mcp__<server>"}},
		{"unclosed tool spec", agent("tools: Read, Bash(git\n"), true,
			[]string{`4:8: tools: "Bash(git" is not a tool name or Tool(rule): it matches no tool`}},
		{"bad mcp entries", agent("mcpServers:\n  - github\n  - 42\n  - a: 1\n  - {a: {type: http}, b: {type: http}}\n  - github\n  - pw:\n      type: stdio\n"), true,
			[]string{
				"6:5: mcpServers: item 2 is a single value, not a server name or {name: config}; ignored",
				`7:5: mcpServers: the configuration of inline server "a" is a single value, not a mapping like a .mcp.json entry; ignored`,
				"8:5: mcpServers: item 4 has 2 keys: an inline server is one key, the server's name, holding its configuration; ignored",
				`9:5: mcpServers: server "github" is given twice; the second is ignored`,
			}},
		{"mcpServers a mapping", agent("mcpServers:\n  github: {}\n"), true,
			[]string{"4:1: mcpServers: want a list of server names and {name: config} entries, got a mapping: ignored"}},
		{"invalid UTF-8", "---\nname: a\ndescription: caf\xe9\n---\n", true,
			[]string{"0:0: the file is not valid UTF-8: invalid bytes are read as U+FFFD"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def, probs := agentdef.Parse("/p/a.md", []byte(tt.src))
			if diff := cmp.Diff(tt.want, problems(probs)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
			if (def != nil) != tt.loaded {
				t.Errorf("loaded = %v, want %v", def != nil, tt.loaded)
			}
			for _, p := range probs {
				if p.Path != "/p/a.md" {
					t.Errorf("problem path %q", p.Path)
				}
			}
		})
	}
}

// bomb is frontmatter whose aliases expand to 9^6 values.
func bomb() string {
	s := "x0: &x0 [a, a, a, a, a, a, a, a, a]\n"
	for i := 1; i <= 5; i++ {
		p := fmt.Sprintf("*x%d", i-1)
		s += fmt.Sprintf("x%d: &x%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(p+", ", 9), ", "))
	}
	return s
}

func TestParseValues(t *testing.T) {
	tests := []struct {
		name  string
		extra string
		check func(*agentdef.Definition) bool
	}{
		{"tools omitted", "", func(d *agentdef.Definition) bool { return d.Tools == nil && d.AllTools() }},
		{"tools with nothing", "tools:\n", func(d *agentdef.Definition) bool { return d.Tools == nil && d.AllTools() }},
		{"tools wildcard", "tools: \"*\"\n", func(d *agentdef.Definition) bool { return d.AllTools() }},
		{"tools split on spaces", "tools: All tools\n", func(d *agentdef.Definition) bool {
			return cmp.Equal(d.Tools, []string{"All", "tools"}) && !d.AllTools()
		}},
		{"tools list items with commas", "tools:\n  - Read, Grep\n  - Bash(git log *)\n", func(d *agentdef.Definition) bool {
			return cmp.Equal(d.Tools, []string{"Read", "Grep", "Bash(git log *)"})
		}},
		{"disallowedTools empty", "disallowedTools: \"\"\n", func(d *agentdef.Definition) bool { return d.DisallowedTools == nil }},
		{"model inherit", "model: Inherit\n", func(d *agentdef.Definition) bool { return d.Model == "" }},
		{"full model id", "model: claude-opus-5-5\n", func(d *agentdef.Definition) bool { return d.Model == "claude-opus-5-5" }},
		{"permission mode plan", "permissionMode: plan\n", func(d *agentdef.Definition) bool { return d.PermissionMode == agentdef.PermissionPlan }},
		{"maxTurns as text", "maxTurns: \"7\"\n", func(d *agentdef.Definition) bool { return d.MaxTurns == 7 }},
		{"background as text", "background: \"yes\"\n", func(d *agentdef.Definition) bool { return d.Background }},
		{"skills as a string", "skills: a, b\n", func(d *agentdef.Definition) bool { return cmp.Equal(d.Skills, []string{"a", "b"}) }},
		{"mcpServers as a string", "mcpServers: github, slack\n", func(d *agentdef.Definition) bool {
			return cmp.Equal(d.MCPServers, []agentdef.MCPServer{{Name: "github"}, {Name: "slack"}})
		}},
		{"empty hooks", "hooks: {}\n", func(d *agentdef.Definition) bool { return d.Hooks == nil }},
		{"digits in the name", "", func(d *agentdef.Definition) bool { return d.Name == "a" }},
		{"aliases", "x: &t Read\ntools: [*t, Grep]\n", func(d *agentdef.Definition) bool { return cmp.Equal(d.Tools, []string{"Read", "Grep"}) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := agent(tt.extra)
			def, probs := agentdef.Parse("/p/a.md", []byte(src))
			if def == nil {
				t.Fatalf("not loaded: %q", problems(probs))
			}
			for _, p := range probs {
				if !strings.Contains(p.Message, `unknown field "x"`) {
					t.Errorf("problem %q", p.Error())
				}
			}
			if !tt.check(def) {
				t.Errorf("%+v", def)
			}
		})
	}
}

func TestParseLimits(t *testing.T) {
	big := agent("") + strings.Repeat("x", agentdef.MaxFileSize)
	def, probs := agentdef.Parse("/p/big.md", []byte(big))
	if def != nil || len(probs) != 1 || !probs[0].Skipped || !strings.Contains(probs[0].Message, "agent files are limited to 1048576 bytes") {
		t.Errorf("%v %q", def, problems(probs))
	}
	// A name of exactly MaxNameLength characters is fine.
	name := strings.Repeat("a", agentdef.MaxNameLength)
	if def, probs := agentdef.Parse("/p/long.md", []byte("---\nname: "+name+"\ndescription: d\n---\n")); def == nil || def.Name != name {
		t.Errorf("%q", problems(probs))
	}
}

func TestProblemError(t *testing.T) {
	for p, want := range map[agentdef.Problem]string{
		{Path: "/a.md", Line: 3, Column: 7, Message: "m"}: "/a.md:3:7: m",
		{Path: "/a.md", Line: 3, Message: "m"}:            "/a.md:3: m",
		{Path: "/a.md", Message: "m"}:                     "/a.md: m",
	} {
		if got := p.Error(); got != want {
			t.Errorf("%q, want %q", got, want)
		}
	}
}

func TestSplitSpec(t *testing.T) {
	for spec, want := range map[string][3]any{
		"Read":                 {"Read", "", true},
		" Bash(git add *) ":    {"Bash", "git add *", true},
		"Task(worker, helper)": {"Agent", "worker, helper", true},
		"Task":                 {"Agent", "", true},
		"Bash(git":             {"", "", false},
		"(x)":                  {"", "", false},
		"":                     {"", "", false},
	} {
		name, content, ok := agentdef.SplitSpec(spec)
		if got := [3]any{name, content, ok}; got != want {
			t.Errorf("SplitSpec(%q) = %v, want %v", spec, got, want)
		}
	}
}

// FuzzParse: no input makes Parse panic, and a definition always has a
// valid name and a description.
func FuzzParse(f *testing.F) {
	f.Add([]byte(agent("tools: Read\nhooks:\n  Stop: []\n")))
	f.Add([]byte("---\nname: x\n---\n"))
	f.Add([]byte("---\n: : :\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		def, _ := agentdef.Parse("/f.md", data)
		if def != nil && (def.Name == "" || def.Description == "") {
			t.Errorf("%+v", def)
		}
	})
}
