package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/clients/cli/agents"
	"github.com/tackle-agent/tackle/clients/cli/internal/render"
	"github.com/tackle-agent/tackle/daemon/daemontest"
	"github.com/tackle-agent/tackle/internal/fakemodel"
)

// voltagent is the directory of twelve real agent definitions (and their
// README and LICENSE, which are not agent files).
const voltagent = "/work/shared/testdata/agents-voltagent"

// agentsProject makes a project whose .claude/agents holds the twelve
// real definitions, and returns it with its agents directory.
func agentsProject(t *testing.T) (dir, agents string) {
	t.Helper()
	dir, _ = project(t)
	agents = filepath.Join(dir, ".claude", "agents")
	if err := os.MkdirAll(agents, 0o755); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(voltagent, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if filepath.Base(f) == "README.md" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(agents, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 12 {
		t.Skipf("%s holds %d agent files, want 12", voltagent, n)
	}
	return dir, agents
}

// The agent types of a project holding twelve real definitions and two
// broken ones: list (for people and as JSON), show, and doctor, which
// reports each broken file at its line and column and fails until they
// are gone.
func TestAgentsListShowDoctor(t *testing.T) {
	d := daemontest.Start(t)
	dir, agentsDir := agentsProject(t)
	badYAML := filepath.Join(agentsDir, "broken-yaml.md")
	noDesc := filepath.Join(agentsDir, "no-description.md")
	// The flow sequence opened on line 3 is never closed: the YAML parser
	// stops at the start of line 4.
	writeTestFile(t, badYAML, "---\nname: broken-yaml\ndescription: [unclosed\ntools: Read\n---\nBody.\n")
	// A name (line 2, its value at column 7) without a description.
	writeTestFile(t, noDesc, "---\nname: no-description\ntools: Read, Grep\n---\nYou have no description.\n")

	r := tackle(t, d, "", "agents", "list", "--cwd", dir, "--json").mustCode(t, 0)
	var types []agents.AgentTypeJSON
	if err := json.Unmarshal([]byte(r.stdout), &types); err != nil {
		t.Fatalf("agents list --json: %v\n%s", err, r.stdout)
	}
	byName := map[string]agents.AgentTypeJSON{}
	sources := map[string]int{}
	for _, ty := range types {
		byName[ty.Name] = ty
		sources[ty.Source]++
	}
	if sources["project"] != 12 || sources["builtin"] != 3 || len(types) != 15 {
		t.Errorf("agent types by source %v (%d in all), want 12 project and 3 builtin", sources, len(types))
	}
	api := byName["api-designer"]
	if api.Source != "project" || api.Model != "sonnet" || api.Path != filepath.Join(agentsDir, "api-designer.md") ||
		strings.Join(api.Tools, ",") != "Read,Write,Edit,Bash,Glob,Grep" || !strings.HasPrefix(api.Description, "Use this agent when designing new APIs") {
		t.Errorf("api-designer = %+v", api)
	}
	if api.Prompt != nil {
		t.Error("agents list --json carries the prompts")
	}
	if gp := byName["general-purpose"]; gp.Source != "builtin" || gp.Path != "" || gp.Tools == nil {
		t.Errorf("general-purpose = %+v (want builtin, no path, tools a list)", gp)
	}
	for _, name := range []string{"broken-yaml", "no-description"} {
		if _, ok := byName[name]; ok {
			t.Errorf("the broken definition %s is listed", name)
		}
	}
	if !strings.Contains(r.stderr, "2 problems in agent definitions: tackle agents doctor") {
		t.Errorf("agents list says nothing of the problems on stderr: %q", r.stderr)
	}

	r = tackle(t, d, "", "agents", "list", "--cwd", dir).mustCode(t, 0)
	if !regexp.MustCompile(`(?m)^golang-pro +project +sonnet +Read, Write, Edit, Bash, Glob, Grep +`+regexp.QuoteMeta(filepath.Join(agentsDir, "golang-pro.md"))+` +Use when building Go applications`).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^general-purpose +builtin +inherit +all +- `).MatchString(r.stdout) {
		t.Errorf("agents list for people:\n%s", r.stdout)
	}

	body, err := os.ReadFile(filepath.Join(agentsDir, "golang-pro.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, prompt, _ := strings.Cut(strings.TrimPrefix(string(body), "---\n"), "\n---\n")
	prompt = strings.TrimSpace(prompt)
	r = tackle(t, d, "", "agents", "show", "golang-pro", "--cwd", dir).mustCode(t, 0)
	for _, want := range []string{"Name:             golang-pro\n", "Source:           project\n", "Model:            sonnet\n",
		"Tools:            Read, Write, Edit, Bash, Glob, Grep\n", "Path:             " + filepath.Join(agentsDir, "golang-pro.md") + "\n",
		"Background:       no\n", "\n\n" + prompt + "\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("agents show lacks %q:\n%.800s", want, r.stdout)
		}
	}
	r = tackle(t, d, "", "agents", "show", "golang-pro", "--cwd", dir, "--json").mustCode(t, 0)
	var shown agents.AgentTypeJSON
	if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil || shown.Prompt == nil || *shown.Prompt != prompt || shown.Name != "golang-pro" {
		t.Errorf("agents show --json: %v\n%.400s", err, r.stdout)
	}
	if r := tackle(t, d, "", "agents", "show", "broken-yaml", "--cwd", dir).mustCode(t, 1); !strings.Contains(r.stderr, `no agent type "broken-yaml"`) {
		t.Errorf("agents show of a broken definition: %q", r.stderr)
	}

	r = tackle(t, d, "", "agents", "doctor", "--cwd", dir).mustCode(t, 1)
	want := badYAML + ":4:1: the frontmatter is not valid YAML: ',' or ']' must be specified (in \"tools: Read\"); the file is skipped\n" +
		noDesc + ":2:7: agent \"no-description\" has no description, which says when to delegate to it: the file is skipped\n"
	if r.stdout != want {
		t.Errorf("agents doctor:\n%s\nwant:\n%s", r.stdout, want)
	}
	if !strings.Contains(r.stderr, "2 problems in agent definitions; 15 definitions load") {
		t.Errorf("agents doctor's summary: %q", r.stderr)
	}
	r = tackle(t, d, "", "agents", "doctor", "--cwd", dir, "--json").mustCode(t, 1)
	var doc struct {
		Loaded   int
		Problems []agents.AgentProblemJSON
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || doc.Loaded != 15 || len(doc.Problems) != 2 ||
		doc.Problems[0] != (agents.AgentProblemJSON{Path: badYAML, Line: 4, Column: 1, Message: doc.Problems[0].Message}) ||
		doc.Problems[1].Path != noDesc || doc.Problems[1].Line != 2 || doc.Problems[1].Column != 7 {
		t.Errorf("agents doctor --json: %v\n%s", err, r.stdout)
	}

	// Fixed: every definition loads, and doctor says so.
	writeTestFile(t, badYAML, "---\nname: broken-yaml\ndescription: Was broken, now fixed\ntools: Read\n---\nBody.\n")
	if err := os.Remove(noDesc); err != nil {
		t.Fatal(err)
	}
	r = tackle(t, d, "", "agents", "doctor", "--cwd", dir).mustCode(t, 0)
	if r.stdout != "all 16 agent definitions load (13 project, 3 builtin)\n" {
		t.Errorf("agents doctor without problems: %q", r.stdout)
	}
	if r := tackle(t, d, "", "agents", "list", "--cwd", dir).mustCode(t, 0); r.stderr != "" || !strings.Contains(r.stdout, "broken-yaml ") {
		t.Errorf("agents list after the fix:\n%s\n%s", r.stdout, r.stderr)
	}
}

// writeTestFile writes a file or fails the test.
func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// agentCall is an Agent tool_use block of the parent's model.
func agentCall(typ, desc, task string, extra ...any) fakemodel.Block {
	in := map[string]any{"description": desc, "prompt": task}
	if typ != "" {
		in["subagent_type"] = typ
	}
	for i := 0; i+1 < len(extra); i += 2 {
		in[extra[i].(string)] = extra[i+1]
	}
	return fakemodel.ToolUse("Agent", in)
}

// sessionOf creates a session of dir with environ (the fake model's) and
// returns its id.
func sessionOf(t *testing.T, environ []string, dir string) string {
	t.Helper()
	r := tackleEnv(t, environ, "", "sessions", "new", "--cwd", dir, "--json").mustCode(t, 0)
	var s struct{ ID string }
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil || s.ID == "" {
		t.Fatalf("sessions new: %v\n%s", err, r.stdout)
	}
	return s.ID
}

// startTackle runs tackle in the background until ctx ends; its exit code
// comes on the channel.
func startTackle(ctx context.Context, environ []string, stdin io.Reader, out, errb *lineBuffer, args ...string) <-chan int {
	done := make(chan int, 1)
	go func() { done <- Main(ctx, args, stdin, out, errb, environ) }()
	return done
}

// indexOf is the index of the first line of text that matches re, -1 if none.
func indexOf(text string, re *regexp.Regexp) int {
	for i, l := range strings.Split(text, "\n") {
		if re.MatchString(l) {
			return i
		}
	}
	return -1
}

// A foreground sub-agent: run and attach draw it under its Agent call
// (started, its Read, ended); agents ps lists it, kill says it had ended;
// sessions list and show tie the child to its parent; attach --session
// CHILD replays the child's own transcript.
func TestSubagentForeground(t *testing.T) {
	_, fm, dir, environ := chatEnv(t, nil)
	file := filepath.Join(dir, "notes.txt")
	writeTestFile(t, file, "the secret word is tackle\n")
	fm.SetScript(fakemodel.Conversations(
		fakemodel.Route{Prompt: "[child]", Script: fakemodel.Turns(
			fakemodel.Call("Read", map[string]any{"file_path": file}),
			fakemodel.Say("The word is tackle."),
		)},
		fakemodel.Route{Prompt: "[parent]", Script: fakemodel.Turns(
			fakemodel.Reply(fakemodel.Text("Delegating."), agentCall("general-purpose", "Find the word", "[child] Read notes.txt and report the secret word.")),
			fakemodel.Say("It is tackle."),
		)},
	))
	sid := sessionOf(t, environ, dir)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	aout, aerr := newLineBuffer(), newLineBuffer()
	attached := startTackle(ctx, environ, strings.NewReader(""), aout, aerr, "attach", "--session", sid, "--observer")
	aout.waitFor(t, "session "+sid)

	r := tackleEnv(t, environ, "", "run", "[parent] what is the secret word?", "--session", sid).mustCode(t, 0)
	if r.stdout != "Delegating.\nIt is tackle.\n" {
		t.Errorf("run's stdout %q", r.stdout)
	}
	running := regexp.MustCompile(`^  ⎿ general-purpose "Find the word" running · 0 tools · \d+\.\ds · id (s_[0-9a-f]+)$`)
	read := regexp.MustCompile(`^      Read ` + regexp.QuoteMeta(file) + `$`)
	done := regexp.MustCompile(`^  ⎿ general-purpose "Find the word" completed · 1 tool · [\d.]+k? tokens · \d+\.\ds$`)
	for name, out := range map[string]string{"run's stderr": r.stderr} {
		i, j, k := indexOf(out, running), indexOf(out, read), indexOf(out, done)
		if i < 0 || j < i || k < j || indexOf(out, regexp.MustCompile(`^● Agent Find the word$`)) > i {
			t.Errorf("%s does not draw the sub-agent under its call (lines %d, %d, %d):\n%s", name, i, j, k, out)
		}
	}
	aout.waitFor(t, `"Find the word" completed · 1 tool`)
	aout.waitFor(t, "prompt ended: end_turn")
	cancel()
	if code := <-attached; code != 0 {
		t.Errorf("attach exit code %d: %s", code, aerr.String())
	}
	out := aout.String()
	i, j, k := indexOf(out, running), indexOf(out, read), indexOf(out, done)
	if i < 0 || j < i || k < j || indexOf(out, regexp.MustCompile(`call_state Agent\(\S+\) running$`)) > i {
		t.Errorf("attach does not draw the sub-agent under its call (lines %d, %d, %d):\n%s", i, j, k, out)
	}
	if strings.Contains(out, "subagent_updated") || strings.Contains(out, "[general-purpose]") {
		t.Errorf("attach prints the raw sub-agent events:\n%s", out)
	}
	m := running.FindStringSubmatch(strings.Split(out, "\n")[i])
	child := m[1]

	// agents ps: the one sub-agent, ended, with its counts.
	r = tackleEnv(t, environ, "", "agents", "ps", "--json").mustCode(t, 0)
	var ps []render.SubagentJSON
	if err := json.Unmarshal([]byte(r.stdout), &ps); err != nil || len(ps) != 1 {
		t.Fatalf("agents ps --json: %v\n%s", err, r.stdout)
	}
	if a := ps[0]; a.ID != child || a.ParentSessionID != sid || a.AgentType != "general-purpose" || a.Description != "Find the word" ||
		a.Status != "completed" || a.ToolUses != 1 || a.Tokens == 0 || a.DurationMS <= 0 || a.Background || a.Depth != 1 {
		t.Errorf("agents ps --json: %+v", a)
	}
	if r := tackleEnv(t, environ, "", "agents", "ps", "--session", child, "--json").mustCode(t, 0); !strings.Contains(r.stdout, child) {
		t.Errorf("agents ps --session CHILD (its tree) lacks it:\n%s", r.stdout)
	}
	r = tackleEnv(t, environ, "", "agents", "ps").mustCode(t, 0)
	if !regexp.MustCompile(`(?m)^` + child + ` +general-purpose +completed +- +1 +[\d.]+k? +\d+\.\ds +` + sid + ` +Find the word$`).MatchString(r.stdout) {
		t.Errorf("agents ps for people:\n%s", r.stdout)
	}
	if r := tackleEnv(t, environ, "", "agents", "kill", child).mustCode(t, 0); r.stdout != "agent "+child+` (general-purpose "Find the word") had already ended: completed`+"\n" {
		t.Errorf("agents kill of an ended agent: %q", r.stdout)
	}
	if r := tackleEnv(t, environ, "", "agents", "kill", "s_0000000000000000").mustCode(t, 1); !strings.Contains(r.stderr, `no sub-agent "s_0000000000000000"`) {
		t.Errorf("agents kill of an unknown id: %q", r.stderr)
	}

	// sessions list marks the child; show ties both ways.
	r = tackleEnv(t, environ, "", "sessions", "list").mustCode(t, 0)
	if !regexp.MustCompile(`(?m)^`+child+` .* ↳ general-purpose of `+sid+` `).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^`+sid+` .* - +`+regexp.QuoteMeta(dir)+`$`).MatchString(r.stdout) {
		t.Errorf("sessions list does not mark the child:\n%s", r.stdout)
	}
	r = tackleEnv(t, environ, "", "sessions", "list", "--json").mustCode(t, 0)
	var list []render.SessionJSON
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		switch s.ID {
		case child:
			if s.Agent == nil || s.Agent.ParentSessionID != sid || s.Agent.RootSessionID != sid || s.Agent.AgentType != "general-purpose" || s.Agent.Depth != 1 {
				t.Errorf("the child in sessions list --json: %+v", s.Agent)
			}
		case sid:
			if s.Agent != nil {
				t.Errorf("the parent has an agent link: %+v", s.Agent)
			}
		}
	}
	r = tackleEnv(t, environ, "", "sessions", "show", sid).mustCode(t, 0)
	if !regexp.MustCompile(`(?m)^sub-agents  ` + child + `  general-purpose "Find the word" completed · 1 tool · `).MatchString(r.stdout) {
		t.Errorf("sessions show PARENT does not list the child:\n%s", r.stdout)
	}
	r = tackleEnv(t, environ, "", "sessions", "show", child).mustCode(t, 0)
	if !strings.Contains(r.stdout, "agent       general-purpose \"Find the word\" (depth 1)\n") ||
		!regexp.MustCompile(`(?m)^parent      `+sid+` \(Agent call toolu_\w+\)$`).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^state       completed · 1 tool · `).MatchString(r.stdout) ||
		!strings.Contains(r.stdout, "sub-agents  (none)\n") {
		t.Errorf("sessions show CHILD:\n%s", r.stdout)
	}
	r = tackleEnv(t, environ, "", "sessions", "show", sid, "--json").mustCode(t, 0)
	var shown struct {
		ID       string
		Children []render.SubagentJSON
	}
	if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil || shown.ID != sid || len(shown.Children) != 1 || shown.Children[0].ID != child || shown.Children[0].Status != "completed" {
		t.Errorf("sessions show --json: %v\n%s", err, r.stdout)
	}

	// The child's own transcript: its prompt, its Read, its answer.
	cout, cerr := newLineBuffer(), newLineBuffer()
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	cdone := startTackle(ctx2, environ, strings.NewReader(""), cout, cerr, "attach", "--session", child, "--from", "1", "--observer")
	cout.waitFor(t, "prompt ended")
	cancel2()
	if code := <-cdone; code != 0 {
		t.Errorf("attach --session CHILD exit code %d: %s", code, cerr.String())
	}
	cl := cout.String()
	for _, re := range []string{
		`^session ` + child + `  cwd ` + regexp.QuoteMeta(dir) + `  `,
		`^  agent    general-purpose "Find the word" of session ` + sid + ` \(call toolu_\w+\)$`,
		`^» \S`,
		`^✓ Read ` + regexp.QuoteMeta(file) + ` · completed · \d+\.\ds · `,
		`^  prompt ended: end_turn$`,
	} {
		if indexOf(cl, regexp.MustCompile(re)) < 0 {
			t.Errorf("attach --session CHILD lacks %s:\n%s", re, cl)
		}
	}
	if strings.Contains(cl, sid+" ") && strings.Contains(cl, "Delegating.") {
		t.Errorf("the child's transcript holds the parent's:\n%s", cl)
	}
}

// childWriteScript is a parent that starts one general-purpose agent
// "Write the file", whose Write of target asks for permission.
func childWriteScript(target string) fakemodel.Script {
	return fakemodel.Conversations(
		fakemodel.Route{Prompt: "[child]", Script: fakemodel.Turns(
			fakemodel.Call("Write", map[string]any{"file_path": target, "content": "written by a child\n"}),
			fakemodel.Say("Wrote it."),
		)},
		fakemodel.Route{Prompt: "[parent]", Script: fakemodel.Turns(
			fakemodel.Reply(agentCall("", "Write the file", "[child] write out.txt")),
			fakemodel.Say("Done."),
		)},
	)
}

// A sub-agent's request reaches tackle attach on the root session's
// terminal naming the agent; answering it there (in the root session,
// where the daemon announced it) lets the child's Write run. tackle run,
// without a terminal, names the agent in its notice.
func TestSubagentPermissionFromAttachTerminal(t *testing.T) {
	_, fm, dir, environ := chatEnv(t, nil)
	target := filepath.Join(dir, "out.txt")
	fm.SetScript(childWriteScript(target))
	sid := sessionOf(t, environ, dir)

	tc := startTermChat(t, environ, "attach", "--session", sid)
	tc.out.waitFor(t, "session "+sid)
	out, errb := newLineBuffer(), newLineBuffer()
	ran := startTackle(context.Background(), environ, strings.NewReader(""), out, errb, "run", "[parent] write it", "--session", sid)
	tc.out.waitFor(t, "Agent general-purpose (Write the file) wants to use Write: ")
	tc.out.waitFor(t, "Answer [y/")
	errb.waitFor(t, "tackle: Write of agent general-purpose (Write the file) waits for permission (answer with tackle permissions answer ")
	if got := tc.out.String(); !regexp.MustCompile(`\? Write of agent general-purpose "Write the file" \(s_[0-9a-f]+\) waits for approval \(request `).MatchString(got) ||
		!regexp.MustCompile(`agent: s_[0-9a-f]+ \(tackle attach --session s_[0-9a-f]+ shows its transcript\)`).MatchString(got) {
		t.Errorf("attach's terminal:\n%s", got)
	}
	r := tackleEnv(t, environ, "", "permissions", "pending").mustCode(t, 0)
	if !regexp.MustCompile(`(?m)^    asked by agent general-purpose \(Write the file\), session s_[0-9a-f]+$`).MatchString(r.stdout) || !regexp.MustCompile(`session s_[0-9a-f]+  Write`).MatchString(r.stdout) || strings.Contains(r.stdout, "session "+sid+"  Write") {
		t.Errorf("permissions pending:\n%s", r.stdout)
	}
	tc.keys("y\r")
	if code := <-ran; code != 0 {
		t.Fatalf("run exit code %d\n%s\n%s\nattach:\n%s", code, out.String(), errb.String(), tc.out.String())
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "written by a child\n" {
		t.Errorf("the child's Write: %q, %v", b, err)
	}
	tc.out.waitFor(t, ": allow_once by tackle-cli (")
	if strings.Contains(tc.out.String(), "answer_error") || strings.Contains(tc.out.String(), "tackle: daemon:") {
		t.Errorf("attach reported an error:\n%s", tc.out.String())
	}
	tc.keys("\x03")
	if err := tc.wait(); err != nil {
		t.Errorf("attach: %v\n%s", err, tc.out.String())
	}
}

// tackle attach --json on the sub-agent's own session lists the request
// that waits in the root session, and an answer without "session" goes to
// the root session, where it is accepted; so does tackle permissions
// answer --session CHILD.
func TestSubagentPermissionFromChildSession(t *testing.T) {
	_, fm, dir, environ := chatEnv(t, nil)
	one, two := filepath.Join(dir, "one.txt"), filepath.Join(dir, "two.txt")
	fm.SetScript(fakemodel.Conversations(
		fakemodel.Route{Prompt: "[child]", Script: fakemodel.Turns(
			fakemodel.Call("Write", map[string]any{"file_path": one, "content": "one\n"}),
			fakemodel.Call("Write", map[string]any{"file_path": two, "content": "two\n"}),
			fakemodel.Say("Wrote both."),
		)},
		fakemodel.Route{Prompt: "[parent]", Script: fakemodel.Turns(
			fakemodel.Reply(agentCall("", "Write the files", "[child] write two files")),
			fakemodel.Say("Done."),
		)},
	))
	sid := sessionOf(t, environ, dir)

	out, errb := newLineBuffer(), newLineBuffer()
	ran := startTackle(context.Background(), environ, strings.NewReader(""), out, errb, "run", "[parent] write them", "--session", sid)
	errb.waitFor(t, "waits for permission (answer with tackle permissions answer ")
	id := answerID(t, errb.String(), 1)

	r := tackleEnv(t, environ, "", "agents", "ps", "--session", sid, "--json").mustCode(t, 0)
	var ps []render.SubagentJSON
	if err := json.Unmarshal([]byte(r.stdout), &ps); err != nil || len(ps) != 1 {
		t.Fatalf("agents ps: %v\n%s", err, r.stdout)
	}
	child := ps[0].ID
	if ps[0].Status != "running" && ps[0].Status != "blocked" {
		t.Errorf("the waiting child's status %q", ps[0].Status)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdin, feed := io.Pipe()
	defer feed.Close()
	aout, aerr := newLineBuffer(), newLineBuffer()
	attached := startTackle(ctx, environ, stdin, aout, aerr, "attach", "--session", child, "--json")
	aout.waitFor(t, `"type":"snapshot"`)
	var snap render.SnapshotJSON
	first, _, _ := strings.Cut(aout.String(), "\n")
	if err := json.Unmarshal([]byte(first), &snap); err != nil {
		t.Fatal(err)
	}
	if len(snap.PendingPermissions) != 1 || snap.PendingPermissions[0].RequestID != id || snap.PendingPermissions[0].Agent == nil ||
		snap.PendingPermissions[0].Agent.ID != child || snap.Session.Agent == nil || snap.Session.Agent.RootSessionID != sid {
		t.Fatalf("the child's snapshot: %s", first)
	}
	fmt.Fprintf(feed, `{"answer": %q, "option": "allow_once"}`+"\n", id)

	// The second Write asks next: answered with the child's session named.
	waitCount(t, errb, "tackle permissions answer ", 2)
	id2 := answerID(t, errb.String(), 2)
	if r := tackleEnv(t, environ, "", "permissions", "answer", id2, "allow", "--session", child).mustCode(t, 0); r.stdout != "answered "+id2+": allow\n" {
		t.Errorf("permissions answer --session CHILD: %q", r.stdout)
	}
	if code := <-ran; code != 0 {
		t.Fatalf("run exit code %d\n%s\n%s\nattach:\n%s\n%s", code, out.String(), errb.String(), aout.String(), aerr.String())
	}
	for f, want := range map[string]string{one: "one\n", two: "two\n"} {
		if b, err := os.ReadFile(f); err != nil || string(b) != want {
			t.Errorf("the child's Write of %s: %q, %v", f, b, err)
		}
	}
	aout.waitFor(t, `"type":"prompt_ended"`)
	cancel()
	if code := <-attached; code != 0 {
		t.Errorf("attach exit code %d: %s", code, aerr.String())
	}
	if strings.Contains(aout.String(), "answer_error") || aerr.String() != "" {
		t.Errorf("attach on the child reported an error:\n%s\n%s", aout.String(), aerr.String())
	}
}

// answerID is the request id of run's n-th "waits for permission" notice.
func answerID(t *testing.T, stderr string, n int) string {
	t.Helper()
	parts := strings.Split(stderr, "tackle permissions answer ")
	if len(parts) <= n {
		t.Fatalf("no notice %d in:\n%s", n, stderr)
	}
	id, _, _ := strings.Cut(parts[n], " ")
	return id
}

// waitCount waits until b holds s n times. The timeout only guards
// against a hung test.
func waitCount(t *testing.T, b *lineBuffer, s string, n int) {
	t.Helper()
	guard := time.NewTimer(30 * time.Second)
	defer guard.Stop()
	for strings.Count(b.String(), s) < n {
		select {
		case <-b.changed:
		case <-guard.C:
			t.Fatalf("timed out waiting for %d of %q in:\n%s", n, s, b.String())
		}
	}
}

// A background sub-agent that runs until stopped: agents ps shows it
// running, agents kill stops it (exit 0), and ps then shows it killed;
// run and attach mark it background.
func TestSubagentKillRunning(t *testing.T) {
	_, fm, dir, environ := chatEnv(t, nil)
	hold := fakemodel.NewHold(0)
	defer hold.Release()
	fm.SetScript(fakemodel.Conversations(
		fakemodel.Route{Prompt: "[child]", Script: fakemodel.Turns(fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("never")}, Hold: hold})},
		fakemodel.Route{Prompt: "[parent]", Script: fakemodel.Turns(
			fakemodel.Reply(agentCall("Explore", "Long survey", "[child] survey forever", "run_in_background", true)),
			fakemodel.Say("Launched."),
			fakemodel.Say("Noted."),
		)},
	))
	sid := sessionOf(t, environ, dir)
	r := tackleEnv(t, environ, "", "run", "[parent] start it", "--session", sid).mustCode(t, 0)
	if !regexp.MustCompile(`(?m)^  ⎿ Explore "Long survey" running · 0 tools · \d+\.\ds · background · id s_[0-9a-f]+$`).MatchString(r.stderr) {
		t.Errorf("run's stderr:\n%s", r.stderr)
	}
	<-hold.Reached()

	ps := func() render.SubagentJSON {
		t.Helper()
		r := tackleEnv(t, environ, "", "agents", "ps", "--session", sid, "--json").mustCode(t, 0)
		var list []render.SubagentJSON
		if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 1 {
			t.Fatalf("agents ps: %v\n%s", err, r.stdout)
		}
		return list[0]
	}
	a := ps()
	if a.Status != "running" || !a.Background || a.AgentType != "Explore" {
		t.Fatalf("the running agent: %+v", a)
	}
	if r := tackleEnv(t, environ, "", "agents", "ps").mustCode(t, 0); !regexp.MustCompile(`(?m)^` + a.ID + ` +Explore +running +yes +0 +0 +\d+\.\ds +` + sid + ` +Long survey$`).MatchString(r.stdout) {
		t.Errorf("agents ps for people:\n%s", r.stdout)
	}
	// attach joining now shows the running agent in its snapshot.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	aout, aerr := newLineBuffer(), newLineBuffer()
	attached := startTackle(ctx, environ, strings.NewReader(""), aout, aerr, "attach", "--session", sid, "--observer")
	aout.waitFor(t, `  agent    Explore "Long survey" running · 0 tools · `)

	if r := tackleEnv(t, environ, "", "agents", "kill", a.ID).mustCode(t, 0); r.stdout != "stopped agent "+a.ID+` (Explore "Long survey")`+"\n" {
		t.Errorf("agents kill: %q", r.stdout)
	}
	if a := ps(); a.Status != "killed" {
		t.Errorf("after the kill: %+v", a)
	}
	aout.waitFor(t, `  ⎿ Explore "Long survey" killed · 0 tools · `)
	cancel()
	if code := <-attached; code != 0 {
		t.Errorf("attach exit code %d: %s", code, aerr.String())
	}
	if o, err := fm.WaitDone(context.Background(), requestsOf(fm, "[child]")[0].Index); err != nil || !o.ClientGone {
		t.Errorf("the child's request: %+v, %v (want it aborted)", o, err)
	}
}

// requestsOf are the model requests of the conversation whose first user
// message contains marker.
func requestsOf(fm *fakemodel.Server, marker string) []*fakemodel.Request {
	var out []*fakemodel.Request
	for _, r := range fm.Requests() {
		if strings.Contains(r.FirstUserText(), marker) {
			out = append(out, r)
		}
	}
	return out
}

// tackle chat draws a sub-agent under its Agent call as run does.
func TestChatShowsSubagents(t *testing.T) {
	_, fm, dir, environ := chatEnv(t, nil)
	fm.SetScript(fakemodel.Conversations(
		fakemodel.Route{Prompt: "[child]", Script: fakemodel.Turns(
			fakemodel.Call("Glob", map[string]any{"pattern": "*.txt"}),
			fakemodel.Say("One file."),
		)},
		fakemodel.Route{Prompt: "[parent]", Script: fakemodel.Turns(
			fakemodel.Reply(agentCall("Explore", "Count files", "[child] count the files")),
			fakemodel.Say("There is one."),
		)},
	))
	r := tackleEnv(t, environ, "[parent] how many files?\n", "chat", "--cwd", dir).mustCode(t, 0)
	if r.stdout != "There is one.\n" {
		t.Errorf("chat's stdout %q", r.stdout)
	}
	want := regexp.MustCompile(`● Agent Count files\n` +
		`  ⎿ Explore "Count files" running · 0 tools · \d+\.\ds · id s_[0-9a-f]+\n` +
		`  ⎿ Explore "Count files" running · 1 tool · \d+\.\ds\n` +
		`      Glob \*\.txt\n` +
		`  ⎿ Explore "Count files" completed · 1 tool · [\d.]+k? tokens · \d+\.\ds\n`)
	if !want.MatchString(r.stderr) {
		t.Errorf("chat's stderr:\n%s", r.stderr)
	}
}
