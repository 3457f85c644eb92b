package skill_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tackle-agent/tackle/daemon/skill"
)

func TestRender(t *testing.T) {
	vars := skill.Vars{SessionID: "s-123", ProjectDir: "/proj", Effort: "high"}
	tests := []struct {
		name string
		body string
		argn []string // named arguments
		args string
		want string
	}{
		{"ARGUMENTS", "Fix issue $ARGUMENTS now.", nil, "#42 urgent", "Fix issue #42 urgent now."},
		{"appended when absent", "Fix the issue.\n", nil, "#42", "Fix the issue.\n\nARGUMENTS: #42"},
		{"not appended without args", "Fix the issue.\n", nil, "  ", "Fix the issue.\n"},
		{"indexed", "from $ARGUMENTS[0] to $ARGUMENTS[1], not $ARGUMENTS[5].", nil, `"a b" c`, "from a b to c, not ."},
		{"dollar N", "$0|$1|$2|$10", nil, `one 'two three' "four \"five\""`, `one|two three|four "five"|`},
		{"named", "Copy $source to ${target}; $other stays.", []string{"source", "target"}, "a.txt 'b c.txt'", "Copy a.txt to b c.txt; $other stays."},
		{"named used: not appended", "Review $file.", []string{"file"}, "x.go", "Review x.go."},
		{"ARGUMENTS is a word", "$ARGUMENTSX and $ARGUMENTS_ and $ARGUMENTS.", nil, "v", "$ARGUMENTSX and $ARGUMENTS_ and v."},
		{"variables", "${TACKLE_SKILL_DIR} ${CLAUDE_SKILL_DIR} ${CLAUDE_SESSION_ID} ${TACKLE_SESSION_ID} ${CLAUDE_PROJECT_DIR} ${TACKLE_PROJECT_DIR} ${CLAUDE_EFFORT} ${HOME} $ 5$",
			nil, "", "/skills/s /skills/s s-123 s-123 /proj /proj high ${HOME} $ 5$"},
		{"unclosed quote runs to the end", "[$0] [$1]", nil, `a "b c`, "[a] [b c]"},
		{"backslash escapes", "[$0] [$1]", nil, `a\ b c`, "[a b] [c]"},
		{"escaped placeholders", `\$ARGUMENTS \$0 \${CLAUDE_SKILL_DIR} \$HOME $0`, nil, "x", `$ARGUMENTS $0 ${CLAUDE_SKILL_DIR} \$HOME x`},
		{"escaped only: appended", `Use \$ARGUMENTS.`, nil, "x", "Use $ARGUMENTS.\n\nARGUMENTS: x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sk := &skill.Skill{Name: "s", Dir: "/skills/s", Body: tt.body, Arguments: tt.argn}
			if got := skill.Render(sk, tt.args, vars, nil); got != tt.want {
				t.Errorf("Render = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRenderCommands(t *testing.T) {
	body := strings.Join([]string{
		"Status:",
		"!`git status --short`",
		"Branch: !`git branch --show-current` (current)",
		"Look at !`cat $0`.",
		"```!",
		"echo one",
		"echo two",
		"```",
		"An example, not run:",
		"```sh",
		"echo !`date`",
		"```",
		"Arguments never run: $ARGUMENTS",
		"Dir: !`ls ${CLAUDE_SKILL_DIR}`",
		"",
	}, "\n")
	sk := &skill.Skill{Name: "s", Dir: "/skills/s", Body: body}
	var ran []string
	run := func(cmd string) string {
		ran = append(ran, cmd)
		return "<" + cmd + ">\n"
	}
	got := skill.Render(sk, `"it's" x !`+"`rm -rf /`", skill.Vars{}, run)
	want := strings.Join([]string{
		"Status:",
		"<git status --short>",
		"Branch: <git branch --show-current> (current)",
		`Look at <cat 'it'\''s'>.`,
		"<echo one\necho two>",
		"An example, not run:",
		"```sh",
		"echo !`date`",
		"```",
		`Arguments never run: "it's" x !` + "`rm -rf /`",
		"Dir: <ls /skills/s>",
		"",
	}, "\n")
	if got != want {
		t.Errorf("Render:\n%s\nwant:\n%s", got, want)
	}
	wantRan := []string{"git status --short", "git branch --show-current", `cat 'it'\''s'`, "echo one\necho two", "ls /skills/s"}
	if diff := cmp.Diff(wantRan, ran); diff != "" {
		t.Errorf("commands run (-want +got):\n%s", diff)
	}
	// Without a runner, commands are reported as not run.
	if got := skill.Render(&skill.Skill{Body: "x !`date` y"}, "", skill.Vars{}, nil); !strings.Contains(got, "[!`date` was not run: ") {
		t.Errorf("Render without runner: %q", got)
	}
}

func TestSplitArgsAndQuote(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  a  b\tc\n", []string{"a", "b", "c"}},
		{`'a b' "c d" e\ f`, []string{"a b", "c d", "e f"}},
		{`"a\"b\\c\n"`, []string{`a"b\c\n`}},
		{`x''y ""`, []string{"xy", ""}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, skill.SplitArgs(tt.in)); diff != "" {
			t.Errorf("SplitArgs(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
	for in, want := range map[string]string{"": "''", "plain-1.go": "plain-1.go", "a b": "'a b'", "it's": `'it'\''s'`, "$(x)": "'$(x)'"} {
		if got := skill.ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRenderBuiltinGuide: the writing-skills guide documents placeholders
// and commands without any being replaced or run.
func TestRenderBuiltinGuide(t *testing.T) {
	sk, ok := skill.NewCatalog(nil).Static(skill.Sources{}).Lookup("writing-skills")
	if !ok {
		t.Fatal("no writing-skills")
	}
	got := skill.Render(sk, "", skill.Vars{SessionID: "SID", ProjectDir: "/PROJ"}, func(cmd string) string {
		t.Errorf("the guide ran %q", cmd)
		return ""
	})
	for _, want := range []string{"| $ARGUMENTS |", "$ARGUMENTS[0], $ARGUMENTS[1], ... and $0, $1", "| $name or ${name} |",
		"`${TACKLE_SKILL_DIR}`; the body", `"${TACKLE_SKILL_DIR}/scripts/check-command.sh"`, "`\\$1` in a shell example that means the shell's own `$1`.",
		"- Current branch: !`git branch --show-current`", "```!\ngit log --oneline -5\n```", "`git log $0`", "tackle skills doctor"} {
		if !strings.Contains(got, want) {
			t.Errorf("rendered guide lacks %q", want)
		}
	}
	for _, bad := range []string{"SID", "/PROJ", "\n\nARGUMENTS:", "[!`"} {
		if strings.Contains(got, bad) {
			t.Errorf("rendered guide contains %q", bad)
		}
	}
}
