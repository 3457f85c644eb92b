package skill_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tackle-agent/tackle/daemon/skill"
	"github.com/tackle-agent/tackle/daemon/tool"
)

// env is a session as the tool sees it.
type env struct{ id, cwd string }

func (e env) SessionID() string                       { return e.id }
func (e env) Cwd() string                             { return e.cwd }
func (e env) WorkingDirs() []string                   { return []string{e.cwd} }
func (e env) Environ() []string                       { return nil }
func (e env) FileState(string) (tool.FileState, bool) { return tool.FileState{}, false }
func (e env) OutputDir() string                       { return filepath.Join(e.cwd, ".out") }

// recorder records the tool's callbacks.
type recorder struct {
	mu      sync.Mutex
	grants  []string
	hooks   []string
	used    []string
	hookErr error
}

func (r *recorder) add(list *[]string, s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	*list = append(*list, s)
}

// toolFixture is a project with skills of every kind and the Skill tool over it.
func toolFixture(t *testing.T) (tool.Tool, *recorder, env) {
	t.Helper()
	root := t.TempDir()
	mkdir(t, root, ".git")
	write(t, root, ".claude/skills/plain/SKILL.md", "---\ndescription: A plain skill\nargument-hint: <what>\n---\nDo $ARGUMENTS in ${CLAUDE_PROJECT_DIR} for ${CLAUDE_SESSION_ID}.\n")
	write(t, root, ".claude/skills/granting/SKILL.md", "---\ndescription: Grants tools\nallowed-tools: Bash(git status:*), Read\nmodel: opus\neffort: high\n---\nStatus: !`git status`\nDenied: !`rm -rf build`\nFailed: !`false`\n")
	write(t, root, ".claude/skills/hooked/SKILL.md", "---\ndescription: Has hooks\nhooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n        - type: command\n          command: ./guard.sh\n---\nGuarded.\n")
	write(t, root, ".claude/skills/forked/SKILL.md", "---\ndescription: Forks\ncontext: fork\nagent: Explore\n---\nExplore.\n")
	write(t, root, ".claude/skills/people-only/SKILL.md", "---\ndescription: For people\ndisable-model-invocation: true\n---\nx\n")
	write(t, root, ".claude/skills/go-only/SKILL.md", "---\ndescription: Go files\npaths: [\"**/*.go\"]\n---\nx\n")
	c := skill.NewCatalog(&skill.Options{Builtin: emptyBuiltin})
	d := skill.NewDynamic()
	src := skill.Sources{Root: root, Cwd: root}
	rec := &recorder{}
	tl := skill.NewTool(&skill.ToolOptions{
		View:   func(tool.Env) *skill.View { return c.View(src, d, nil) },
		Budget: func(tool.Env) int { return 0 },
		Usage:  func(string, string) int { return 0 },
		Used:   func(sid, name string) { rec.add(&rec.used, sid+" "+name) },
		Grant:  func(sid, _ string, rules []string) { rec.add(&rec.grants, sid+" "+strings.Join(rules, ",")) },
		AddHooks: func(sid, name string, hooks json.RawMessage) error {
			rec.add(&rec.hooks, sid+" "+name+" "+string(hooks))
			return rec.hookErr
		},
		Vars: func(tool.Env) skill.Vars { return skill.Vars{Effort: "medium"} },
	})
	return tl, rec, env{id: "sess-1", cwd: root}
}

// nested is a fake pipeline: "rm" is denied, "false" fails, the rest succeed.
func nested(calls *[]string) tool.NestedFunc {
	return func(_ context.Context, name string, input json.RawMessage) (*tool.Result, error) {
		var in struct{ Command string }
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		*calls = append(*calls, name+": "+in.Command)
		switch {
		case strings.HasPrefix(in.Command, "rm"):
			return &tool.Result{Content: []tool.Content{tool.Text("Permission to use Bash with command rm -rf build has been denied.")}, IsError: true, Display: "denied"}, nil
		case in.Command == "false":
			return &tool.Result{Content: []tool.Content{tool.Text("Exit code 1")}, IsError: true, Display: "failed"}, nil
		}
		return &tool.Result{Content: []tool.Content{tool.Text(" M file.go\n")}, Display: "completed"}, nil
	}
}

func call(e env, in string, n tool.NestedFunc) *tool.Call {
	return &tool.Call{ID: "c1", Name: "Skill", Input: json.RawMessage(in), Env: e, Nested: n}
}

func resultText(r *tool.Result) string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

func TestSkillToolRun(t *testing.T) {
	tl, rec, e := toolFixture(t)
	ctx := context.Background()
	var calls []string

	// A plain skill: rendered, read-only, no grants, use recorded.
	c := call(e, `{"skill":"/plain","args":"the work"}`, nested(&calls))
	if err := tl.Validate(ctx, c); err != nil {
		t.Fatal(err)
	}
	acc, err := tl.CheckPermission(ctx, c)
	if err != nil || acc.Kind != tool.AccessOther || acc.Specifier != "plain" || !acc.InsideWorkingDirs || len(acc.Paths) != 0 {
		t.Errorf("CheckPermission = %+v, %v", acc, err)
	}
	res, err := tl.Run(ctx, c, nil)
	if err != nil || res.IsError {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	wantText := "Base directory for this skill: " + filepath.Join(e.cwd, ".claude/skills/plain") + "\n\nDo the work in " + e.cwd + " for sess-1.\n"
	if got := resultText(res); got != wantText {
		t.Errorf("text = %q, want %q", got, wantText)
	}
	if string(res.Structured) != `{"commandName":"plain","status":"inline","success":true}` {
		t.Errorf("structured = %s", res.Structured)
	}

	// A granting skill: commands through the pipeline, a denied one shown as not run.
	c = call(e, `{"skill":"granting"}`, nested(&calls))
	acc, _ = tl.CheckPermission(ctx, c)
	if acc.Specifier != "granting" || acc.InsideWorkingDirs || acc.Kind != tool.AccessExternal || !strings.Contains(acc.Reason, "pre-approves") {
		t.Errorf("CheckPermission of a granting skill = %+v: want it to ask", acc)
	}
	res, err = tl.Run(ctx, c, nil)
	if err != nil || res.IsError {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	body := strings.SplitN(resultText(res), "\n\n", 2)[1]
	wantBody := "Status:  M file.go\nDenied: [!`rm -rf build` was not run: Permission to use Bash with command rm -rf build has been denied.]\nFailed: Exit code 1\n"
	if body != wantBody {
		t.Errorf("body = %q, want %q", body, wantBody)
	}
	if diff := cmp.Diff([]string{"Bash: git status", "Bash: rm -rf build", "Bash: false"}, calls); diff != "" {
		t.Errorf("nested calls (-want +got):\n%s", diff)
	}
	var st map[string]any
	if err := json.Unmarshal(res.Structured, &st); err != nil {
		t.Fatal(err)
	}
	wantSt := map[string]any{"success": true, "commandName": "granting", "status": "inline", "model": "opus", "effort": "high",
		"allowedTools": []any{"Bash(git status:*)", "Read"}}
	if diff := cmp.Diff(wantSt, st); diff != "" {
		t.Errorf("structured (-want +got):\n%s", diff)
	}

	// A skill with hooks registers them.
	res, _ = tl.Run(ctx, call(e, `{"skill":"hooked"}`, nil), nil)
	if res.IsError {
		t.Fatalf("hooked: %s", resultText(res))
	}
	if diff := cmp.Diff([]string{"sess-1 Bash(git status:*),Read"}, rec.grants); diff != "" {
		t.Errorf("grants (-want +got):\n%s", diff)
	}
	wantHooks := []string{`sess-1 hooked {"PreToolUse":[{"hooks":[{"command":"./guard.sh","type":"command"}],"matcher":"Bash"}]}`}
	if diff := cmp.Diff(wantHooks, rec.hooks); diff != "" {
		t.Errorf("hooks (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"sess-1 plain", "sess-1 granting", "sess-1 hooked"}, rec.used); diff != "" {
		t.Errorf("used (-want +got):\n%s", diff)
	}

	// Hooks that cannot be registered: the skill is not loaded, nothing granted.
	rec.hookErr = errFake("bad matcher")
	res, _ = tl.Run(ctx, call(e, `{"skill":"hooked"}`, nil), nil)
	if !res.IsError || !strings.Contains(resultText(res), "registering its hooks failed: bad matcher") {
		t.Errorf("hook failure: %s", resultText(res))
	}
	if len(rec.used) != 3 || len(rec.grants) != 1 {
		t.Errorf("after a hook failure: used %v grants %v", rec.used, rec.grants)
	}
}

type errFake string

func (e errFake) Error() string { return string(e) }

func TestSkillToolErrors(t *testing.T) {
	tl, rec, e := toolFixture(t)
	ctx := context.Background()
	tests := []struct {
		in   string
		want string
	}{
		{`{"skill":"nope"}`, `unknown skill "nope". Available skills: forked, granting, hooked, plain.`},
		{`{"skill":"  "}`, "skill is empty"},
		{`{"skill":"forked"}`, `skill "forked" runs in a forked context (context: fork), which this session cannot start`},
		{`{"skill":"people-only"}`, `skill "people-only" can only be run by a person (disable-model-invocation). Available skills: forked, granting, hooked, plain.`},
		{`{"skill":"go-only"}`, `skill "go-only" is not active: it applies only to files matching **/*.go, and none was touched yet.`},
		{`[1]`, "the input is not valid JSON for Skill"},
	}
	for _, tt := range tests {
		c := call(e, tt.in, nil)
		err := tl.Validate(ctx, c)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Validate(%s) = %v, want %q", tt.in, err, tt.want)
		}
		res, rerr := tl.Run(ctx, c, nil)
		if rerr != nil || !res.IsError || !strings.HasPrefix(resultText(res), tt.want) {
			t.Errorf("Run(%s) = %+v, %v", tt.in, res, rerr)
		}
	}
	if len(rec.used)+len(rec.grants)+len(rec.hooks) > 0 {
		t.Errorf("callbacks called for failed calls: %+v", rec)
	}
}

func TestSkillToolDescription(t *testing.T) {
	tl, _, e := toolFixture(t)
	desc := tl.(*skill.Tool).Description(e)
	want := skill.ListingIntro + "- forked: Forks\n- granting: Grants tools\n- hooked: Has hooks\n- plain: A plain skill [args: <what>]\n"
	if desc != want {
		t.Errorf("Description:\n%s\nwant:\n%s", desc, want)
	}
	spec := tl.Spec()
	if spec.Name != "Skill" || !json.Valid(spec.InputSchema) || !strings.HasPrefix(spec.Description, skill.ListingIntro) {
		t.Errorf("spec %+v", spec)
	}
	if a := tl.Attributes(nil); !a.ReadOnly || !a.ConcurrencySafe {
		t.Errorf("attributes %+v", a)
	}
}

// TestSkillToolNoPipeline: without Nested, commands are reported as not run.
func TestSkillToolNoPipeline(t *testing.T) {
	tl, _, e := toolFixture(t)
	res, err := tl.Run(context.Background(), call(e, `{"skill":"granting"}`, nil), nil)
	if err != nil || res.IsError || !strings.Contains(resultText(res), "Status: [!`git status` was not run: commands in skills need the tool pipeline") {
		t.Errorf("Run = %q, %v", resultText(res), err)
	}
}
