package agentdef_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tackle-agent/tackle/daemon/agentdef"
)

// FuzzParseDefinition: an agent file either does not load, with at least
// one Problem marked Skipped, or loads with no skipping Problem as a
// definition with the documented properties: a valid name (lowercase
// letters, digits, hyphens, at most MaxNameLength), a description, every
// enumerated field one of its values, a tools list that is omitted or not
// empty, disallowed tools that each name a tool, unique named MCP servers,
// hooks only for events tackle runs, each a list of mappings, and a
// prompt without surrounding blank lines. Every Problem names the file
// and a line of it. Parsing is deterministic, bounded in time and in what
// it makes of the file, and a definition round-trips: written back as
// frontmatter (JSON values, which YAML reads as written) over its prompt,
// it parses to the same definition.
func FuzzParseDefinition(f *testing.F) {
	for _, dir := range []string{"testdata/voltagent", "/work/shared/testdata/agents-voltagent", "builtin"} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".md") && e.Name() != "README.md" {
				if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
					f.Add(b)
				}
			}
		}
	}
	for _, s := range []string{
		"---\nname: x\ndescription: y\n---\n",
		"---\nname: reviewer\ndescription: Reviews code\ntools: Read, Grep, Bash(git diff *)\ndisallowedTools: [Write, \"mcp__*\"]\nmodel: inherit\n" +
			"permissionMode: acceptEdits\nmaxTurns: 5\nskills: [a, b]\nmcpServers:\n  - github\n  - local:\n      type: stdio\n      command: srv\n" +
			"hooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n        - type: command\n          command: ./check.sh\n" +
			"memory: project\nbackground: true\neffort: high\nisolation: worktree\ncolor: Blue\ninitialPrompt: go\nomitClaudeMd: yes\n---\n\nYou review.\n",
		"---\nname: Bad Name\ndescription: x\n---\n", "---\nname: x\n---\n", "---\n: : :\n---\n", "---\nname: x\ndescription: y\ntools: []\n---\n",
		"---\nname: x\ndescription: y\nmaxTurns: 1.5\n---\n", "---\nname: x\ndescription: y\npermissionMode: manual\n---\n",
		"---\nname: x\ndescription: y\ndisallowed-tools: Bash\n---\n", "---\nname: x\ndescription: y\nhooks: {Nope: []}\n---\n",
		"---\nname: x\ndescription: y\na: &a [1, 2]\nb: &b [*a, *a]\nskills: *b\n---\n", "no frontmatter", "---\nname: x\n", "\ufeff---\r\nname: x\r\ndescription: y\r\n---\r\nbody",
		"---\nname: x\ndescription: y\n---\n---\nname: z\n---\n", "---\n- a\n---\n", "---\nname: x\ndescription: y\n...\nbody",
	} {
		f.Add([]byte(s))
	}
	const path = "/p/.claude/agents/file.md"
	nameRE := regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	f.Fuzz(func(t *testing.T, data []byte) {
		start := time.Now()
		def, problems := agentdef.Parse(path, data)
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("Parse took %v on %d bytes", d, len(data))
		}
		skipped := slices.ContainsFunc(problems, func(p agentdef.Problem) bool { return p.Skipped })
		if (def == nil) != skipped {
			t.Fatalf("definition %v with problems %v: a file loads exactly when no problem skips it", def, problems)
		}
		lines := bytes.Count(data, []byte("\n")) + 1
		for _, p := range problems {
			if p.Path != path || strings.TrimSpace(p.Message) == "" || p.Line < 0 || p.Column < 0 || p.Line > lines+1 {
				t.Fatalf("problem %+v of a %d-line file", p, lines)
			}
		}
		if def == nil {
			return
		}
		checkDefinition(t, def, path, nameRE)
		b, err := json.Marshal(def)
		if err != nil {
			t.Fatalf("the definition does not encode: %v", err)
		}
		if limit := 8*len(data) + 4096; len(b) > limit {
			t.Fatalf("a %d-byte file gives a %d-byte definition, over %d", len(data), len(b), limit)
		}
		again, _ := agentdef.Parse(path, data)
		if !reflect.DeepEqual(def, again) {
			t.Fatalf("Parse is not deterministic:\n%+v\n%+v", def, again)
		}

		back := frontmatterOf(t, def)
		def2, problems := agentdef.Parse(path, back)
		if def2 == nil {
			t.Fatalf("the definition written back does not load: %v\n%s", problems, back)
		}
		def.Path, def2.Path = "", ""
		if diff := defDiff(def, def2); diff != "" {
			t.Fatalf("round trip: %s differs\nwritten back:\n%s", diff, back)
		}
	})
}

func checkDefinition(t *testing.T, d *agentdef.Definition, path string, nameRE *regexp.Regexp) {
	t.Helper()
	if d.Path != path || d.Source != "" {
		t.Fatalf("path %q, source %q", d.Path, d.Source)
	}
	if !nameRE.MatchString(d.Name) || utf8.RuneCountInString(d.Name) > agentdef.MaxNameLength {
		t.Fatalf("name %q", d.Name)
	}
	if strings.TrimSpace(d.Description) == "" || strings.TrimSpace(d.Description) != d.Description {
		t.Fatalf("description %q", d.Description)
	}
	if d.Prompt != strings.TrimSpace(d.Prompt) || !utf8.ValidString(d.Prompt) {
		t.Fatalf("prompt %q is not trimmed UTF-8", d.Prompt)
	}
	oneOf := func(field, v string, values ...string) {
		if v != "" && !slices.Contains(values, v) {
			t.Fatalf("%s %q is not one of %q", field, v, values)
		}
	}
	oneOf("permissionMode", d.PermissionMode, agentdef.PermissionDefault, agentdef.PermissionAcceptEdits, agentdef.PermissionAuto,
		agentdef.PermissionDontAsk, agentdef.PermissionBypass, agentdef.PermissionPlan)
	oneOf("memory", d.Memory, "user", "project", "local")
	oneOf("effort", d.Effort, "low", "medium", "high", "xhigh", "max")
	oneOf("isolation", d.Isolation, agentdef.IsolationWorktree)
	oneOf("color", d.Color, "red", "blue", "green", "yellow", "purple", "orange", "pink", "cyan")
	if d.MaxTurns < 0 {
		t.Fatalf("maxTurns %d", d.MaxTurns)
	}
	if d.Tools != nil && len(d.Tools) == 0 {
		t.Fatal("an empty tools list loads (it would read as every tool)")
	}
	for _, spec := range append(slices.Clone(d.Tools), d.DisallowedTools...) {
		if strings.TrimSpace(spec) == "" {
			t.Fatalf("tool spec %q", spec)
		}
	}
	for _, spec := range d.DisallowedTools {
		if _, _, ok := agentdef.SplitSpec(spec); !ok {
			t.Fatalf("disallowed tool %q names no tool (it would remove nothing)", spec)
		}
	}
	seen := map[string]bool{}
	for _, m := range d.MCPServers {
		if m.Name == "" || seen[m.Name] {
			t.Fatalf("MCP server %q empty or twice", m.Name)
		}
		seen[m.Name] = true
	}
	events := []string{"PreToolUse", "PermissionRequest", "PermissionDenied", "PostToolUse", "PostToolUseFailure", "PostToolBatch", "Notification",
		"SessionStart", "SessionEnd", "CwdChanged", "ConfigChange", "UserPromptSubmit", "Stop", "PreCompact", "SubagentStart", "SubagentStop"}
	for ev, v := range d.Hooks {
		list, ok := v.([]any)
		if !slices.Contains(events, ev) || !ok {
			t.Fatalf("hooks.%s = %#v", ev, v)
		}
		for _, it := range list {
			if _, ok := it.(map[string]any); !ok {
				t.Fatalf("hooks.%s item %#v is not a mapping", ev, it)
			}
		}
	}
}

// frontmatterOf writes d back as an agent file, one `key: JSON` line a
// field.
func frontmatterOf(t *testing.T, d *agentdef.Definition) []byte {
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
	put("name", d.Name)
	put("description", d.Description)
	for k, v := range map[string]string{"model": d.Model, "permissionMode": d.PermissionMode, "memory": d.Memory, "effort": d.Effort,
		"isolation": d.Isolation, "color": d.Color, "initialPrompt": d.InitialPrompt} {
		if v != "" {
			put(k, v)
		}
	}
	if d.Tools != nil {
		put("tools", d.Tools)
	}
	if d.DisallowedTools != nil {
		put("disallowedTools", d.DisallowedTools)
	}
	if d.Skills != nil {
		put("skills", d.Skills)
	}
	if d.MaxTurns != 0 {
		put("maxTurns", d.MaxTurns)
	}
	if d.MCPServers != nil {
		var list []any
		for _, m := range d.MCPServers {
			if m.Inline() {
				list = append(list, map[string]any{m.Name: m.Config})
			} else {
				list = append(list, m.Name)
			}
		}
		put("mcpServers", list)
	}
	if d.Hooks != nil {
		put("hooks", d.Hooks)
	}
	put("background", d.Background)
	put("omitClaudeMd", d.OmitClaudeMd)
	b.WriteString("---\n")
	b.WriteString(d.Prompt)
	return b.Bytes()
}

// defDiff names the first field that differs between a and b.
func defDiff(a, b *agentdef.Definition) string {
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	for i := 0; i < va.NumField(); i++ {
		f := va.Type().Field(i)
		if !f.IsExported() {
			continue
		}
		x, y := va.Field(i).Interface(), vb.Field(i).Interface()
		if f.Name == "Hooks" || f.Name == "MCPServers" {
			jx, _ := json.Marshal(x)
			jy, _ := json.Marshal(y)
			if !bytes.Equal(jx, jy) {
				return f.Name + ": " + string(jx) + " vs " + string(jy)
			}
			continue
		}
		if !reflect.DeepEqual(x, y) {
			j1, _ := json.Marshal(x)
			j2, _ := json.Marshal(y)
			return f.Name + ": " + string(j1) + " vs " + string(j2)
		}
	}
	return ""
}
