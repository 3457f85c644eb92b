package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tackle-agent/tackle/internal/testpeers"
)

type skillJSON struct {
	Name           string `json:"name"`
	Description    string `json:"description"`
	Source         string `json:"source"`
	Path           string `json:"path"`
	ModelInvocable bool   `json:"model_invocable"`
	UserInvocable  bool   `json:"user_invocable"`
	Active         bool   `json:"active"`
}

func (e *env) skills(session string) map[string]skillJSON {
	e.t.Helper()
	var list []skillJSON
	e.json(&list, "", "skills", "list", "--session", session)
	out := map[string]skillJSON{}
	for _, k := range list {
		out[k.Name] = k
	}
	return out
}

func TestSkillsThroughTheDaemon(t *testing.T) {
	e := newEnv(t)
	if err := os.Mkdir(filepath.Join(e.project, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.write(".claude/skills/review/SKILL.md", "---\nname: Review\ndescription: Review a change: read it, then report.\nwhen_to_use: when asked to review\nargument-hint: <file>\n---\nReview $ARGUMENTS in ${CLAUDE_PROJECT_DIR}.\nSays: !`echo hello-from-cmd`\nCleans: !`rm -rf build`\n")
	e.write(".claude/skills/secret/SKILL.md", "---\ndescription: Only for people\ndisable-model-invocation: true\n---\nSecret steps for $0.\n")
	e.write(".claude/skills/sql/SKILL.md", "---\ndescription: SQL style\npaths: [\"**/*.sql\"]\n---\nUse lower-case keywords.\n")
	e.write(".claude/skills/broken/SKILL.md", "---\ndescription: [unclosed\n  - : x\n---\nBody\n")
	e.write(".claude/commands/legacy.md", "Do the legacy thing with $ARGUMENTS.\n")
	e.write("pkg/deep/.claude/skills/review/SKILL.md", "---\ndescription: Review for the deep package\n---\nDeep review.\n")
	e.write("pkg/deep/code.go", "package deep\n")
	e.write("db/schema.sql", "create table t (id int);\n")
	home := filepath.Join(e.home, ".claude", "skills", "mine", "SKILL.md")
	if err := os.MkdirAll(filepath.Dir(home), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(home, []byte("---\ndescription: My own skill: with an unquoted colon\n---\nMine.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var sess struct {
		ID string `json:"id"`
	}
	e.json(&sess, "", "sessions", "new")

	ks := e.skills(sess.ID)
	for name, want := range map[string]skillJSON{
		"review":         {Source: "project", ModelInvocable: true, UserInvocable: true, Active: true},
		"secret":         {Source: "project", ModelInvocable: false, UserInvocable: true, Active: true},
		"sql":            {Source: "project", ModelInvocable: true, UserInvocable: true, Active: false},
		"legacy":         {Source: "command", ModelInvocable: true, UserInvocable: true, Active: true},
		"mine":           {Source: "user", ModelInvocable: true, UserInvocable: true, Active: true},
		"writing-skills": {Source: "builtin", ModelInvocable: true, UserInvocable: true, Active: true},
	} {
		got, ok := ks[name]
		if !ok {
			t.Errorf("skill %s missing (have %v)", name, keys(ks))
			continue
		}
		if got.Source != want.Source || got.ModelInvocable != want.ModelInvocable || got.UserInvocable != want.UserInvocable || got.Active != want.Active {
			t.Errorf("skill %s: %+v, want %+v", name, got, want)
		}
	}
	if _, ok := ks["broken"]; ok {
		t.Error("a broken SKILL.md is listed as a skill")
	}
	// The doctor names the broken file with its line; everything else still loads.
	r := e.tackle("", "skills", "doctor", "--session", sess.ID)
	if r.code != 1 || !strings.Contains(r.stdout, filepath.Join(".claude", "skills", "broken", "SKILL.md")+":") {
		t.Errorf("skills doctor: %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// The model sees names and descriptions in the Skill tool, never the hidden one.
	var tools []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	}
	e.json(&tools, "", "tools", "--session", sess.ID)
	desc := ""
	for _, tl := range tools {
		if tl.Name == "Skill" {
			desc = tl.Description
		}
	}
	if !strings.Contains(desc, "review: Review a change") || strings.Contains(desc, "secret") || strings.Contains(desc, "Secret steps") {
		t.Errorf("Skill tool description:\n%s", desc)
	}

	// Invoking: arguments substituted, !`cmd` lines through the pipeline —
	// the read-only echo runs, the rm asks and, with nobody to answer, is denied.
	res, rr := e.callJSON("Skill", map[string]any{"skill": "review", "args": "main.go"}, "--session", sess.ID, "--permission-timeout", "1")
	text := res.text()
	if rr.code != 0 || !strings.Contains(text, "Review main.go in "+e.project) || !strings.Contains(text, "Says: hello-from-cmd") ||
		!strings.Contains(text, "[!`rm -rf build` was not run") {
		t.Fatalf("Skill review: %d %s\n%s", rr.code, res.Status, text)
	}
	res, _ = e.callJSON("Skill", map[string]any{"skill": "secret"}, "--session", sess.ID)
	if res.Status != "invalid" || !strings.Contains(res.text(), "secret") {
		t.Errorf("the model invoked a disable-model-invocation skill: %s %q", res.Status, res.text())
	}
	// A person may invoke it.
	r = e.tackle("", "skill", "--session", sess.ID, "secret", "alpha", "beta")
	if r.code != 0 || !strings.Contains(r.stdout, "Secret steps for alpha.") {
		t.Errorf("tackle skill secret: %d %s %s", r.code, r.stdout, r.stderr)
	}

	// Reading a file below a nested skills directory loads its skills (the
	// clashing name gets its directory's name); a .sql file activates sql.
	if _, rr := e.callJSON("Read", map[string]any{"file_path": filepath.Join(e.project, "pkg", "deep", "code.go")}, "--session", sess.ID); rr.code != 0 {
		t.Fatal(rr.stderr)
	}
	if _, rr := e.callJSON("Read", map[string]any{"file_path": filepath.Join(e.project, "db", "schema.sql")}, "--session", sess.ID); rr.code != 0 {
		t.Fatal(rr.stderr)
	}
	ks = e.skills(sess.ID)
	if k, ok := ks["deep:review"]; !ok || k.Source != "nested" || !strings.Contains(k.Path, filepath.Join("pkg", "deep")) {
		t.Errorf("nested skill after a Read: %+v (have %v)", k, keys(ks))
	}
	if !ks["sql"].Active {
		t.Error("sql is not active after a .sql file was read")
	}
	evs := attachUntil(t, e, sess.ID, func(ev map[string]any) bool {
		s, _ := ev["text"].(string)
		return ev["type"] == "skills_changed" && strings.Contains(s, "sql")
	})
	changed := 0
	for _, ev := range evs {
		if ev["type"] == "skills_changed" {
			changed++
		}
	}
	if changed != 2 {
		t.Errorf("%d skills_changed events, want 2", changed)
	}
	// Loading skills changed no permission: a Write is still asked (and denied unanswered).
	res, _ = e.callJSON("Write", map[string]any{"file_path": filepath.Join(e.project, "new.txt"), "content": "x"}, "--session", sess.ID, "--permission-timeout", "1")
	if res.Status != "denied" {
		t.Errorf("a Write after skills loaded: %s", res.Status)
	}
}

func TestMCPPromptsAreSkills(t *testing.T) {
	e := newEnv(t)
	e.write("mcp.json", mustJSON(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": testpeers.Bin(t, "mcp-server-everything"), "args": []string{"stdio"}},
	}}))
	var sess struct {
		ID string `json:"id"`
	}
	e.json(&sess, "", "sessions", "new", "--mcp-config", filepath.Join(e.project, "mcp.json"))
	e.waitMCP("everything", connected, "--session", sess.ID)
	k, ok := e.skills(sess.ID)["mcp__everything__args-prompt"]
	if !ok || k.Source != "mcp" || !k.UserInvocable || k.ModelInvocable {
		t.Fatalf("MCP prompt as a skill: %+v %v", k, ok)
	}
	r := e.tackle("", "skill", "--session", sess.ID, "mcp__everything__args-prompt", "Lyon")
	if r.code != 0 || !strings.Contains(r.stdout, "Lyon") {
		t.Fatalf("tackle skill mcp__everything__args-prompt Lyon: %d %s %s", r.code, r.stdout, r.stderr)
	}
	var out struct {
		Text string `json:"text"`
	}
	rr := e.tackle("", "skill", "--session", sess.ID, "--json", "mcp__everything__args-prompt", "city=Paris", "state=IDF")
	if err := json.Unmarshal([]byte(rr.stdout), &out); err != nil || !strings.Contains(out.Text, "Paris") || !strings.Contains(out.Text, "IDF") {
		t.Errorf("named prompt arguments: %q %v", rr.stdout, err)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
