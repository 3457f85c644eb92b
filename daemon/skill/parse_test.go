package skill_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/goleak"

	"github.com/tackle-agent/tackle/daemon/skill"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// parseFile parses a file of the corpus.
func parseFile(t *testing.T, path string) (*skill.Skill, []skill.Problem) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return skill.Parse(path, data)
}

// fieldsOnly compares the parsed fields, not where the file was or its body.
var fieldsOnly = cmpopts.IgnoreFields(skill.Skill{}, "Path", "Dir", "Body", "Warnings", "Source")

func base(name string) *skill.Skill {
	return &skill.Skill{Name: name, ModelInvocable: true, UserInvocable: true, Background: true}
}

func with(sk *skill.Skill, f func(*skill.Skill)) *skill.Skill { f(sk); return sk }

func TestParseCorpus(t *testing.T) {
	tests := []struct {
		dir      string
		want     *skill.Skill // nil: a problem
		body     string       // body prefix
		warnings []string     // substrings, one per warning, in order
		problem  string       // "line:col: message substring"
	}{
		{dir: "all-fields", want: &skill.Skill{
			Name: "all-fields", Label: "All the fields",
			Description:  "Exercises every frontmatter field tackle reads.",
			WhenToUse:    "When a test needs every field at once.",
			ArgumentHint: "<file> [mode]", Arguments: []string{"file", "mode"},
			ModelInvocable: false, UserInvocable: false,
			AllowedTools: []string{"Read", "Bash(git status:*)"}, DisallowedTools: []string{"WebFetch", "WebSearch"},
			Model: "sonnet", Effort: "high", Context: "fork", Agent: "Explore", Background: false, Shell: "bash",
			Hooks: []byte(`{"PreToolUse":[{"hooks":[{"command":"./check.sh","type":"command"}],"matcher":"Bash"}]}`),
			Paths: []string{"src/**/*.go", "docs/"},
		}, body: "# All fields\n\nRead $file in $mode mode.\n"},
		{dir: "unquoted-colon", want: with(base("unquoted-colon"), func(s *skill.Skill) {
			s.Label = "unquoted-colon"
			s.Description = `Deploys the app. Use when: the user says "ship it"`
			s.WhenToUse = "Trigger phrases: deploy, release"
			s.AllowedTools = []string{"Bash(make deploy)"}
		}), body: "Deploy with", warnings: []string{"line 3:14: mapping value is not allowed in this context): read leniently"}},
		{dir: "crlf", want: with(base("crlf"), func(s *skill.Skill) {
			s.Label, s.Description, s.ArgumentHint = "crlf", "Written on Windows with CRLF line endings.", "<branch>"
		}), body: "Check out $ARGUMENTS.\n\nThen run the tests.\n"},
		{dir: "bom", want: with(base("bom"), func(s *skill.Skill) {
			s.Label, s.Description = "bom", "Starts with a UTF-8 byte order mark."
		}), body: "Body after a BOM.\n"},
		{dir: "bom-crlf-lenient", want: with(base("bom-crlf-lenient"), func(s *skill.Skill) {
			s.Description = "BOM, CRLF and an unquoted colon: all at once"
		}), body: "Body.\n", warnings: []string{"line 2:14"}},
		{dir: "no-frontmatter", want: with(base("no-frontmatter"), func(s *skill.Skill) {
			s.Description = "Write release notes for the changes since the last tag, grouped by area."
		}), body: "# Release notes\n\nWrite release notes"},
		{dir: "block-scalars", want: with(base("block-scalars"), func(s *skill.Skill) {
			s.Description = "First line of a literal block.\nSecond line: with a colon."
			s.WhenToUse = "Folded text on two lines."
		}), body: "Body."},
		{dir: "string-lists", want: with(base("string-lists"), func(s *skill.Skill) {
			s.Description = "Lists given as strings."
			s.AllowedTools = []string{"Bash(git add:*)", "Bash(git commit:*)", "Read"}
			s.Arguments = []string{"source", "target"}
			s.Paths = []string{"src/**/*.{ts,tsx}", "docs/*.md"}
		}), body: "Copy $source"},
		{dir: "bad-values", want: with(base("bad-values"), func(s *skill.Skill) {
			s.Description = "Values of the wrong type and unknown keys."
			s.AllowedTools = []string{"Read"}
			s.Paths = []string{"[unclosed"}
		}), body: "Body.", warnings: []string{
			`"allowed_tools" is read as "allowed-tools"`,
			`unknown frontmatter field "colour"`,
			"user-invocable: want true or false, got maybe: using true",
			`context: "sideways" is not "fork"`,
			`paths: "[unclosed" is not a valid glob`,
			"hooks: want a mapping",
		}},
		{dir: "lenient-list", want: with(base("lenient-list"), func(s *skill.Skill) {
			s.Label, s.Description = "lenient-list", "Review: checks a diff"
			s.Paths = []string{"*.go", "Makefile"}
		}), body: "Review the diff.", warnings: []string{"read leniently"}},
		// Claude Code keeps an unquoted argument-hint as text: two bracket
		// groups (not YAML: the skill failed), one group (a YAML list: the
		// hint was dropped), and the same beside another lenient value.
		{dir: "argument-hint-groups", want: with(base("argument-hint-groups"), func(s *skill.Skill) {
			s.Label, s.Description = "argument-hint-groups", "Reviews a pull request with a priority and an assignee."
			s.ArgumentHint = "[pr-number] [priority] [assignee]"
			s.AllowedTools = []string{"Bash(gh pr view:*)"}
		}), body: "Review PR #$1", warnings: []string{`argument-hint: [pr-number] [priority] [assignee] is read as the text "[pr-number] [priority] [assignee]", as Claude Code does`}},
		{dir: "argument-hint-list", want: with(base("argument-hint-list"), func(s *skill.Skill) {
			s.Label, s.Description = "argument-hint-list", "Creates a git commit with the message given."
			s.ArgumentHint = "[message]"
		}), body: "Commit the staged", warnings: []string{`argument-hint: [message] is read as the text "[message]"`}},
		{dir: "argument-hint-lenient", want: with(base("argument-hint-lenient"), func(s *skill.Skill) {
			s.Description = "Fixes an issue: reads it, writes the fix and a test"
			s.ArgumentHint = "[issue-number] [branch]"
		}), body: "Fix issue $1", warnings: []string{"line 2:14: mapping value is not allowed in this context): read leniently", `argument-hint: [issue-number] [branch] is read as the text "[issue-number] [branch]"`}},
		{dir: "empty-body", want: with(base("empty-body"), func(s *skill.Skill) {
			s.Description = "Nothing after the frontmatter."
		}), warnings: []string{"no instructions"}},
		{dir: "broken-yaml", problem: "4:1: the frontmatter is not valid YAML: ',' or ']' must be specified"},
		{dir: "unclosed", problem: "1:1: the frontmatter opened by --- on line 1 is never closed"},
		{dir: "not-a-mapping", problem: "2:1: the frontmatter is a list"},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			path := filepath.Join("testdata", "corpus", tt.dir, "SKILL.md")
			sk, probs := parseFile(t, path)
			if tt.want == nil {
				if sk != nil || len(probs) != 1 {
					t.Fatalf("Parse = %+v, %v; want one problem", sk, probs)
				}
				if got := probs[0].Error(); !strings.HasPrefix(got, path+":"+tt.problem) {
					t.Errorf("problem = %q, want prefix %q", got, path+":"+tt.problem)
				}
				return
			}
			if len(probs) > 0 {
				t.Fatalf("problems: %v", probs)
			}
			if diff := cmp.Diff(tt.want, sk, fieldsOnly, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("fields (-want +got):\n%s", diff)
			}
			if !strings.HasPrefix(sk.Body, tt.body) {
				t.Errorf("body = %q, want prefix %q", sk.Body, tt.body)
			}
			if strings.ContainsAny(sk.Body, "\r\uFEFF") {
				t.Errorf("body keeps a CR or BOM: %q", sk.Body)
			}
			if sk.Path != path || sk.Dir != filepath.Dir(path) {
				t.Errorf("Path, Dir = %q, %q", sk.Path, sk.Dir)
			}
			if len(sk.Warnings) != len(tt.warnings) {
				t.Fatalf("warnings = %q, want %d like %q", sk.Warnings, len(tt.warnings), tt.warnings)
			}
			for i, w := range tt.warnings {
				if !strings.Contains(sk.Warnings[i], w) {
					t.Errorf("warning %d = %q, want it to contain %q", i, sk.Warnings[i], w)
				}
			}
		})
	}
}

// TestParseAnthropic: every real skill parses without problems or warnings.
func TestParseAnthropic(t *testing.T) {
	files, err := filepath.Glob("../../../shared/testdata/skills-anthropic/*/SKILL.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		files, _ = filepath.Glob("/work/shared/testdata/skills-anthropic/*/SKILL.md")
	}
	if len(files) < 12 {
		t.Fatalf("found %d Anthropic skills, want 12", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(filepath.Dir(f)), func(t *testing.T) {
			sk, probs := parseFile(t, f)
			if len(probs) > 0 || sk == nil {
				t.Fatalf("problems: %v", probs)
			}
			if len(sk.Warnings) > 0 {
				t.Errorf("warnings: %q", sk.Warnings)
			}
			if sk.Label != sk.Name {
				t.Errorf("label %q, name %q", sk.Label, sk.Name)
			}
			if len(sk.Description) < 50 || strings.TrimSpace(sk.Body) == "" {
				t.Errorf("description %q, body %d bytes", sk.Description, len(sk.Body))
			}
		})
	}
}

func TestParseEdgeCases(t *testing.T) {
	long := strings.Repeat("é", 1000)
	tests := []struct {
		name    string
		path    string
		data    string
		check   func(t *testing.T, sk *skill.Skill)
		problem string
	}{
		{name: "command file name", path: "/p/.claude/commands/fix-issue.md", data: "Fix issue $ARGUMENTS.\n",
			check: func(t *testing.T, sk *skill.Skill) {
				if sk.Name != "fix-issue" || sk.Description != "Fix issue $ARGUMENTS." {
					t.Errorf("name %q desc %q", sk.Name, sk.Description)
				}
			}},
		{name: "empty file", path: "/p/s/empty/SKILL.md", data: "",
			check: func(t *testing.T, sk *skill.Skill) {
				if sk.Description != "" || len(sk.Warnings) != 1 {
					t.Errorf("desc %q warnings %q", sk.Description, sk.Warnings)
				}
			}},
		{name: "empty frontmatter", path: "/p/s/e/SKILL.md", data: "---\n---\nBody text.\n",
			check: func(t *testing.T, sk *skill.Skill) {
				if sk.Description != "Body text." || sk.Body != "Body text.\n" {
					t.Errorf("desc %q body %q", sk.Description, sk.Body)
				}
			}},
		{name: "description cut at 1536", path: "/p/s/long/SKILL.md",
			data: "---\ndescription: " + long + "\nwhen_to_use: " + long + "\n---\nx\n",
			check: func(t *testing.T, sk *skill.Skill) {
				if n, m := len([]rune(sk.Description)), len([]rune(sk.WhenToUse)); n != 1000 || m != 536 {
					t.Errorf("description %d runes, when_to_use %d runes; want 1000 + 536", n, m)
				}
				if len(sk.Warnings) != 1 || !strings.Contains(sk.Warnings[0], "cut to 1536") {
					t.Errorf("warnings %q", sk.Warnings)
				}
			}},
		{name: "binary", path: "/p/s/bin/SKILL.md", data: "---\x00\x01", problem: "not text"},
		{name: "junk line", path: "/p/s/j/SKILL.md", data: "---\nname: x\nthis is not yaml\n---\n", problem: `/p/s/j/SKILL.md:3:1: the frontmatter is not valid YAML: non-map value is specified (in "this is not yaml")`},
		{name: "duplicate key", path: "/p/s/d/SKILL.md", data: "---\nname: a\nname: b\n---\n", problem: `:3:1: the frontmatter is not valid YAML: mapping key "name" already defined`},
		{name: "unclosed quote", path: "/p/s/q/SKILL.md", data: "---\ndescription: \"never closed\n---\n", problem: "the frontmatter is not valid YAML"},
		{name: "tab indentation read leniently", path: "/p/s/tab/SKILL.md", data: "---\ndescription: a: b\n\tmore text\n---\nx\n",
			check: func(t *testing.T, sk *skill.Skill) {
				if sk.Description != "a: b more text" {
					t.Errorf("desc %q", sk.Description)
				}
			}},
		{name: "one-line frontmatter is not frontmatter", path: "/p/s/dash/SKILL.md", data: "---",
			problem: "never closed"},
		{name: "horizontal rule later is body", path: "/p/s/hr/SKILL.md", data: "Intro.\n\n---\n\nMore.\n",
			check: func(t *testing.T, sk *skill.Skill) {
				if sk.Description != "Intro." || !strings.Contains(sk.Body, "---") {
					t.Errorf("desc %q body %q", sk.Description, sk.Body)
				}
			}},
		{name: "numbers and booleans as text", path: "/p/s/n/SKILL.md", data: "---\ndescription: 2024\nmodel: 4\nuser-invocable: \"false\"\n---\nx\n",
			check: func(t *testing.T, sk *skill.Skill) {
				if sk.Description != "2024" || sk.Model != "4" || sk.UserInvocable {
					t.Errorf("desc %q model %q user %v", sk.Description, sk.Model, sk.UserInvocable)
				}
			}},
		{name: "lenient keeps nested hooks", path: "/p/s/lh/SKILL.md",
			data: "---\ndescription: Guard: blocks rm\nhooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n        - type: command\n          command: ./guard.sh\n---\nx\n",
			check: func(t *testing.T, sk *skill.Skill) {
				if sk.Description != "Guard: blocks rm" || string(sk.Hooks) != `{"PreToolUse":[{"hooks":[{"command":"./guard.sh","type":"command"}],"matcher":"Bash"}]}` || len(sk.Warnings) != 1 {
					t.Errorf("desc %q hooks %s warnings %q", sk.Description, sk.Hooks, sk.Warnings)
				}
			}},
		{name: "quoted argument-hint: no warning", path: "/p/s/qh/SKILL.md", data: "---\nargument-hint: \"[a] [b]\"\n---\nx\n",
			check: func(t *testing.T, sk *skill.Skill) {
				if sk.ArgumentHint != "[a] [b]" || len(sk.Warnings) != 0 {
					t.Errorf("hint %q warnings %q", sk.ArgumentHint, sk.Warnings)
				}
			}},
		{name: "argument-hint in braces", path: "/p/s/bh/SKILL.md", data: "---\nargument-hint: {file} [--force]\nargument_hint_extra: 1\n---\nx\n",
			check: func(t *testing.T, sk *skill.Skill) {
				if sk.ArgumentHint != "{file} [--force]" || len(sk.Warnings) != 2 || !strings.Contains(sk.Warnings[0], `is read as the text "{file} [--force]"`) {
					t.Errorf("hint %q warnings %q", sk.ArgumentHint, sk.Warnings)
				}
			}},
		{name: "misspelt argument_hint", path: "/p/s/mh/SKILL.md", data: "---\nargument_hint: [x] [y]\n---\nx\n",
			check: func(t *testing.T, sk *skill.Skill) {
				if sk.ArgumentHint != "[x] [y]" || len(sk.Warnings) != 2 {
					t.Errorf("hint %q warnings %q", sk.ArgumentHint, sk.Warnings)
				}
			}},
		{name: "argument-hint as a block list stays a list", path: "/p/s/lh2/SKILL.md", data: "---\nargument-hint:\n  - file\n---\nx\n",
			check: func(t *testing.T, sk *skill.Skill) {
				if sk.ArgumentHint != "" || len(sk.Warnings) != 1 || !strings.Contains(sk.Warnings[0], "argument-hint: want text, got a list") {
					t.Errorf("hint %q warnings %q", sk.ArgumentHint, sk.Warnings)
				}
			}},
		{name: "argument-hint unclosed beside broken YAML elsewhere", path: "/p/s/uh/SKILL.md", data: "---\nargument-hint: [a\nallowed-tools: [Read\n---\nx\n",
			problem: `:3:16: the frontmatter is not valid YAML: sequence end token ']' not found (in "allowed-tools: [Read")`},
		{name: "invalid utf-8", path: "/p/s/u/SKILL.md", data: "---\ndescription: caf\xe9\n---\nx\n",
			check: func(t *testing.T, sk *skill.Skill) {
				if sk.Description != "caf\uFFFD" || len(sk.Warnings) != 1 {
					t.Errorf("desc %q warnings %q", sk.Description, sk.Warnings)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sk, probs := skill.Parse(tt.path, []byte(tt.data))
			if tt.problem != "" {
				if sk != nil || len(probs) != 1 || !strings.Contains(probs[0].Error(), tt.problem) {
					t.Fatalf("Parse = %v, %v; want a problem containing %q", sk, probs, tt.problem)
				}
				return
			}
			if sk == nil || len(probs) > 0 {
				t.Fatalf("problems: %v", probs)
			}
			tt.check(t, sk)
		})
	}
}

// TestParseMegabyteBody: a 1 MB body parses whole, with no description in
// the frontmatter (the first paragraph is used).
func TestParseMegabyteBody(t *testing.T) {
	var b strings.Builder
	b.WriteString("---\nname: big\n---\n")
	line := strings.Repeat("word ", 19) + "end\n"
	for b.Len() < 1<<20 {
		b.WriteString(line)
	}
	b.WriteString("\nLast paragraph.\n")
	dir := filepath.Join(t.TempDir(), "big")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "SKILL.md")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	sk, probs := parseFile(t, path)
	if sk == nil || len(probs) > 0 {
		t.Fatalf("problems: %v", probs)
	}
	if len(sk.Body) < 1<<20-20 || !strings.HasSuffix(sk.Body, "Last paragraph.\n") {
		t.Errorf("body is %d bytes, ends %q", len(sk.Body), sk.Body[len(sk.Body)-20:])
	}
	if n := len([]rune(sk.Description)); n != skill.MaxDescription {
		t.Errorf("description is %d runes, want it cut to %d", n, skill.MaxDescription)
	}
}

func TestProblemError(t *testing.T) {
	for _, tt := range []struct {
		p    skill.Problem
		want string
	}{
		{skill.Problem{Path: "a/SKILL.md", Line: 3, Column: 7, Message: "bad"}, "a/SKILL.md:3:7: bad"},
		{skill.Problem{Path: "a/SKILL.md", Line: 3, Message: "bad"}, "a/SKILL.md:3: bad"},
		{skill.Problem{Path: "a/SKILL.md", Message: "bad"}, "a/SKILL.md: bad"},
	} {
		if got := tt.p.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}
