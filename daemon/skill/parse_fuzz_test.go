package skill_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tackle-agent/tackle/daemon/skill"
)

// FuzzParse: a SKILL.md either is one Problem that names the file and a
// place in it, or a skill with the documented properties: its name from
// the path, text fields in valid UTF-8, description and when_to_use
// within MaxDescription characters, context "fork" or inline, hooks as a
// JSON object, list items that are trimmed and not empty, a body that is
// the end of the file. Parsing is deterministic and bounded in time, and
// a skill round-trips: its fields written back as frontmatter (JSON
// scalars, which YAML reads as written) over its body parse to the same
// skill.
func FuzzParse(f *testing.F) {
	for _, dir := range []string{"testdata/corpus", "testdata/compat", "/work/shared/testdata/skills-anthropic"} {
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
				if b, err := os.ReadFile(p); err == nil && len(b) < 64<<10 {
					f.Add(b)
				}
			}
			return nil
		})
	}
	for _, s := range []string{
		"---\nname: x\n---\n", "---\n: : :\n---\n", "---\nargument-hint: [pr] [priority]\n---\nbody", "---\nhooks: [1]\n---\n",
		"---\nallowed-tools: Bash(git add:*), Read Grep\npaths: src/**/*.{ts,tsx}, docs/*.md\n---\nx", "---\n---\n", "---", "---\r\nname: x\r\n---\r\nb",
		"\ufeff---\nname: x\n...\nbody", "---\ndescription: |\n  multi\n  line\n---\n", "---\nuser-invocable: maybe\nbackground: no\n---\n",
		"---\na: &a [x, x]\nb: &b [*a, *a]\nallowed-tools: *b\n---\n", "# Heading\n\nFirst paragraph\nwraps.\n\n```\ncode\n```\n",
	} {
		f.Add([]byte(s))
	}
	const path = "/p/.claude/skills/my-skill/SKILL.md"
	f.Fuzz(func(t *testing.T, data []byte) {
		var (
			sk       *skill.Skill
			problems []skill.Problem
		)
		start := time.Now()
		sk, problems = skill.Parse(path, data)
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("Parse took %v on %d bytes", d, len(data))
		}
		if (sk == nil) == (len(problems) == 0) {
			t.Fatalf("skill %v and %d problems: want one of them", sk, len(problems))
		}
		if sk == nil {
			if len(problems) != 1 {
				t.Fatalf("%d problems: %v", len(problems), problems)
			}
			checkProblem(t, data, problems[0], path)
			return
		}
		checkSkill(t, sk, path)
		// What a skill holds is bounded by its file: JSON may escape a
		// byte as six (\u003c), nothing more.
		size := len(sk.Hooks)
		for _, w := range sk.Warnings {
			size += len(w)
		}
		if limit := 8*len(data) + 4096; size > limit {
			t.Fatalf("a %d-byte file gives a skill of %d bytes (hooks and warnings), over %d", len(data), size, limit)
		}
		text := normalized(data)
		if !strings.HasSuffix(text, sk.Body) {
			t.Fatalf("the body %q is not the end of the file %q", sk.Body, text)
		}
		if !strings.HasPrefix(text, "---") && (sk.Body != text || sk.Label != "") {
			t.Fatalf("a file without frontmatter gave body %q, label %q", sk.Body, sk.Label)
		}
		again, _ := skill.Parse(path, data)
		if !reflect.DeepEqual(sk, again) {
			t.Fatalf("Parse is not deterministic:\n%+v\n%+v", sk, again)
		}

		back := frontmatterOf(t, sk)
		sk2, problems := skill.Parse(path, back)
		if sk2 == nil {
			t.Fatalf("the skill written back does not parse: %v\n%s", problems, back)
		}
		for _, c := range []struct {
			field     string
			got, want any
		}{
			{"Label", sk2.Label, sk.Label}, {"Description", sk2.Description, sk.Description}, {"WhenToUse", sk2.WhenToUse, sk.WhenToUse},
			{"ArgumentHint", sk2.ArgumentHint, sk.ArgumentHint}, {"Arguments", sk2.Arguments, sk.Arguments},
			{"ModelInvocable", sk2.ModelInvocable, sk.ModelInvocable}, {"UserInvocable", sk2.UserInvocable, sk.UserInvocable},
			{"AllowedTools", sk2.AllowedTools, sk.AllowedTools}, {"DisallowedTools", sk2.DisallowedTools, sk.DisallowedTools},
			{"Model", sk2.Model, sk.Model}, {"Effort", sk2.Effort, sk.Effort}, {"Context", sk2.Context, sk.Context},
			{"Agent", sk2.Agent, sk.Agent}, {"Shell", sk2.Shell, sk.Shell}, {"Background", sk2.Background, sk.Background},
			{"Paths", sk2.Paths, sk.Paths}, {"Hooks", canonicalJSON(sk2.Hooks), canonicalJSON(sk.Hooks)},
			// The body written back is normalized once more: "\r\r\n" became
			// "\r\n" the first time and becomes "\n" now.
			{"Body", strings.TrimLeft(sk2.Body, "\n"), strings.TrimLeft(normalized([]byte(sk.Body)), "\n")},
		} {
			if !reflect.DeepEqual(emptyAsNil(c.got), emptyAsNil(c.want)) {
				t.Fatalf("round trip: %s is %#v, want %#v\nwritten back:\n%s", c.field, c.got, c.want, back)
			}
		}
	})
}

// checkSkill asserts what Skill documents of a parsed file.
func checkSkill(t *testing.T, sk *skill.Skill, path string) {
	t.Helper()
	if sk.Name == "" || sk.Name != skill.NameFromPath(path) || sk.Path != path || sk.Dir != filepath.Dir(path) || sk.Source != "" {
		t.Fatalf("skill %q (path %q, dir %q, source %q) for %s", sk.Name, sk.Path, sk.Dir, sk.Source, path)
	}
	for name, s := range map[string]string{"Label": sk.Label, "Description": sk.Description, "WhenToUse": sk.WhenToUse, "ArgumentHint": sk.ArgumentHint,
		"Model": sk.Model, "Effort": sk.Effort, "Agent": sk.Agent, "Shell": sk.Shell, "Body": sk.Body} {
		if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
			t.Fatalf("%s %q is not valid UTF-8 text", name, s)
		}
	}
	if n := utf8.RuneCountInString(sk.Description) + utf8.RuneCountInString(sk.WhenToUse); n > skill.MaxDescription {
		t.Fatalf("description and when_to_use are %d characters, over %d", n, skill.MaxDescription)
	}
	if sk.Context != "" && sk.Context != "fork" {
		t.Fatalf("context %q", sk.Context)
	}
	if sk.Hooks != nil {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sk.Hooks, &m); err != nil || m == nil {
			t.Fatalf("hooks %q are not a JSON object: %v", sk.Hooks, err)
		}
	}
	for name, list := range map[string][]string{"Arguments": sk.Arguments, "AllowedTools": sk.AllowedTools, "DisallowedTools": sk.DisallowedTools, "Paths": sk.Paths} {
		for _, it := range list {
			if it == "" || strings.TrimSpace(it) != it || !utf8.ValidString(it) {
				t.Fatalf("%s item %q", name, it)
			}
		}
	}
	for _, w := range sk.Warnings {
		if strings.TrimSpace(w) == "" {
			t.Fatal("an empty warning")
		}
	}
}

// checkProblem: a problem names path, says something, and its position
// (when it has one) is a line of the file.
func checkProblem(t *testing.T, data []byte, p skill.Problem, path string) {
	t.Helper()
	if p.Path != path || strings.TrimSpace(p.Message) == "" || p.Line < 0 || p.Column < 0 {
		t.Fatalf("problem %+v for %s", p, path)
	}
	if lines := bytes.Count(data, []byte("\n")) + 1; p.Line > lines {
		t.Fatalf("problem %v: line %d of a %d-line file", p, p.Line, lines)
	}
}

// normalized is the file as Parse reads it: without BOM, CRLF as LF,
// invalid UTF-8 as U+FFFD.
func normalized(data []byte) string {
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	s := strings.ReplaceAll(string(data), "\r\n", "\n")
	return strings.ToValidUTF8(s, "\uFFFD")
}

// frontmatterOf writes sk's fields as frontmatter, one `key: JSON` line
// each, over its body.
func frontmatterOf(t *testing.T, sk *skill.Skill) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("---\n")
	put := func(k string, v any) {
		j, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("encoding %s: %v", k, err)
		}
		b.WriteString(k + ": " + string(j) + "\n")
	}
	for k, v := range map[string]string{"name": sk.Label, "description": sk.Description, "when_to_use": sk.WhenToUse, "argument-hint": sk.ArgumentHint,
		"model": sk.Model, "effort": sk.Effort, "context": sk.Context, "agent": sk.Agent, "shell": sk.Shell} {
		if v != "" {
			put(k, v)
		}
	}
	for k, v := range map[string][]string{"arguments": sk.Arguments, "allowed-tools": sk.AllowedTools, "disallowed-tools": sk.DisallowedTools, "paths": sk.Paths} {
		if v != nil {
			put(k, v)
		}
	}
	put("disable-model-invocation", !sk.ModelInvocable)
	put("user-invocable", sk.UserInvocable)
	put("background", sk.Background)
	if sk.Hooks != nil {
		b.WriteString("hooks: " + string(sk.Hooks) + "\n")
	}
	b.WriteString("---\n")
	b.WriteString(sk.Body)
	return b.Bytes()
}

// emptyAsNil reads an empty list as none, which the frontmatter cannot
// tell apart.
func emptyAsNil(v any) any {
	if l, ok := v.([]string); ok && len(l) == 0 {
		return []string(nil)
	}
	return v
}

// canonicalJSON decodes b, so equal JSON compares equal.
func canonicalJSON(b []byte) any {
	if b == nil {
		return nil
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return "!" + string(b)
	}
	return v
}
