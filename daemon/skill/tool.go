package skill

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// ToolName is the Skill tool's model-facing name.
const ToolName = "Skill"

// SlashCommandAlias is the Skill tool's alias for Claude Code's SlashCommand
// tool, through which its model runs a custom slash command: the input
// {"command": "/name args"} is accepted for {"skill": "name", "args": "args"}.
const SlashCommandAlias = "SlashCommand"

// ToolOptions connects the Skill tool to the daemon. View is required; the
// other callbacks may be nil.
type ToolOptions struct {
	// View returns the session's skills now.
	View func(env tool.Env) *View
	// Budget is the listing budget in characters (setting
	// skillListingBudget; DefaultBudget when nil or not positive).
	Budget func(env tool.Env) int
	// Usage tells how often a session used a skill (for listing trimming).
	Usage func(sessionID, name string) int
	// Used records that a session used a skill.
	Used func(sessionID, name string)
	// Grant turns a skill's allowed-tools into temporary session allow
	// rules (they expire at the client's next end of turn, or after 10
	// minutes).
	Grant func(sessionID, skill string, rules []string)
	// AddHooks registers a skill's frontmatter hooks (settings JSON shape)
	// for the rest of the session.
	AddHooks func(sessionID, skill string, hooks json.RawMessage) error
	// Vars returns the effort of the session for ${CLAUDE_EFFORT}, and may
	// override the project directory (default: the first working directory).
	Vars func(env tool.Env) Vars
	// Fork runs a context: fork skill's rendered text as the task of a
	// sub-agent (nil: such skills are refused).
	Fork func(ctx context.Context, call *tool.Call, sk *Skill, task string, progress tool.Progress) (Forked, error)
}

// Forked is what became of a forked skill's sub-agent.
type Forked struct {
	AgentID string
	// Background is set when the agent runs on and reports later; Result
	// is then the line that says so, else the agent's report.
	Background bool
	Result     string
}

// Tool is the Skill tool (alias SlashCommand): {skill, args?} — or Claude
// Code's SlashCommand input {command: "/name args"} — loads a skill's
// rendered instructions. It is safe for concurrent use.
type Tool struct {
	o ToolOptions
}

// NewTool returns the Skill tool.
func NewTool(o *ToolOptions) tool.Tool {
	t := &Tool{}
	if o != nil {
		t.o = *o
	}
	return t
}

var toolSchema = json.RawMessage(`{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "skill": {"type": "string", "description": "The skill's name, as listed (e.g. \"pdf\", \"my-plugin:review\")"},
    "args": {"type": "string", "description": "Arguments for the skill, as a person would type them after /<name>"},
    "command": {"type": "string", "description": "Instead of skill and args: the slash command as a person would type it (e.g. \"/review src\")"}
  },
  "oneOf": [{"required": ["skill"]}, {"required": ["command"]}],
  "additionalProperties": false
}`)

// Spec implements tool.Tool. Its description is the listing without the
// session's skills; Description(env) gives the session's own. The schema
// takes skill (with args) or command, exactly one of them.
func (t *Tool) Spec() tool.Spec {
	return tool.Spec{Name: ToolName, Aliases: []string{SlashCommandAlias}, Description: Listing(nil, 0, nil), InputSchema: toolSchema}
}

// Description is the model-facing description for one session: Listing of
// its active model-invocable skills within its budget.
func (t *Tool) Description(env tool.Env) string {
	v := t.view(env)
	if v == nil {
		return Listing(nil, 0, nil)
	}
	budget := 0
	if t.o.Budget != nil {
		budget = t.o.Budget(env)
	}
	var usage func(string) int
	if t.o.Usage != nil {
		sid := env.SessionID()
		usage = func(name string) int { return t.o.Usage(sid, name) }
	}
	return Listing(v.ModelSkills(), budget, usage)
}

func (t *Tool) view(env tool.Env) *View {
	if t.o.View == nil {
		return nil
	}
	return t.o.View(env)
}

// Attributes implements tool.Tool. Loading instructions is read-only; a
// skill that pre-approves tools or registers hooks is made to ask in
// CheckPermission instead (Attributes cannot see the session).
func (t *Tool) Attributes(json.RawMessage) tool.Attributes {
	return tool.Attributes{ReadOnly: true, ConcurrencySafe: true, Origin: tool.OriginBuiltin}
}

type input struct {
	Skill   string  `json:"skill"`
	Args    string  `json:"args"`
	Command *string `json:"command"`
}

// decode reads a call's input. name is the name the model called the tool
// by (Skill or SlashCommand), for the messages. A command ("/review src")
// is split at its first space into the skill's name and its args.
func decode(name string, raw json.RawMessage) (input, error) {
	if name == "" {
		name = ToolName
	}
	var in input
	if err := json.Unmarshal(raw, &in); err != nil {
		if name == SlashCommandAlias {
			return in, fmt.Errorf("the input is not valid JSON for %s (%v); send {\"command\": \"/<name> <args>\"}", name, err)
		}
		return in, fmt.Errorf("the input is not valid JSON for %s (%v); send {\"skill\": \"<name>\", \"args\": \"...\"}", name, err)
	}
	if in.Command != nil {
		if in.Skill != "" {
			return in, fmt.Errorf("give either skill (with args) or command, not both: {\"command\": \"/<name> <args>\"} or {\"skill\": \"<name>\", \"args\": \"...\"}")
		}
		skill, args := strings.TrimSpace(*in.Command), ""
		if i := strings.IndexFunc(skill, unicode.IsSpace); i >= 0 {
			skill, args = skill[:i], strings.TrimSpace(skill[i:])
		}
		if args != "" && in.Args != "" {
			return in, fmt.Errorf("the arguments are given twice, in command and in args: put them in command only (\"/<name> <args>\")")
		}
		in.Skill = skill
		if args != "" {
			in.Args = args
		}
	}
	in.Skill = strings.TrimPrefix(strings.TrimSpace(in.Skill), "/")
	return in, nil
}

// resolve finds the skill a call names, or says why it cannot run.
func (t *Tool) resolve(call *tool.Call) (input, *Skill, error) {
	in, err := decode(call.Name, call.Input)
	if err != nil {
		return in, nil, err
	}
	if in.Skill == "" {
		if in.Command != nil {
			return in, nil, fmt.Errorf("command is empty: give \"/<name> <args>\", <name> being one of the available skills")
		}
		return in, nil, fmt.Errorf("skill is empty: give the name of one of the available skills")
	}
	v := t.view(call.Env)
	if v == nil {
		return in, nil, fmt.Errorf("no skills are available in this session")
	}
	sk, ok := v.Find(in.Skill)
	switch {
	case !ok:
		return in, nil, fmt.Errorf("unknown skill %q. %s", in.Skill, available(v))
	case !v.Active(in.Skill):
		return in, nil, fmt.Errorf("skill %q is not active: it applies only to files matching %s, and none was touched yet. %s",
			in.Skill, strings.Join(sk.Paths, ", "), available(v))
	case !sk.ModelInvocable:
		return in, nil, fmt.Errorf("skill %q can only be run by a person (disable-model-invocation). %s", in.Skill, available(v))
	case sk.Context == "fork" && t.o.Fork == nil:
		return in, nil, fmt.Errorf("skill %q runs in a forked context (context: fork), which this session cannot start: follow the task without it", in.Skill)
	case sk.Prompt != nil:
		return in, nil, fmt.Errorf("skill %q is an MCP prompt, which the Skill tool cannot fetch yet", in.Skill)
	}
	return in, sk, nil
}

// available names the skills the model may load.
func available(v *View) string {
	var names []string
	for _, sk := range v.ModelSkills() {
		names = append(names, sk.Name)
	}
	if len(names) == 0 {
		return "No skills are available."
	}
	sort.Strings(names)
	return "Available skills: " + strings.Join(names, ", ") + "."
}

// Validate implements tool.Tool: the skill must exist, be active, be
// model-invocable and run inline.
func (t *Tool) Validate(_ context.Context, call *tool.Call) error {
	_, _, err := t.resolve(call)
	return err
}

// CheckPermission implements tool.Tool: Access{Kind: AccessOther,
// Specifier: name}, so Skill(name) rules match. A skill without
// allowed-tools and hooks is read-only inside the working directories
// (auto-allowed); one with either touches its own file, reported outside
// the working directories, so it asks unless a rule allows Skill(name).
func (t *Tool) CheckPermission(_ context.Context, call *tool.Call) (tool.Access, error) {
	in, sk, err := t.resolve(call)
	if err != nil {
		return tool.Access{Kind: tool.AccessOther, Specifier: in.Skill, InsideWorkingDirs: true}, nil
	}
	a := tool.Access{Kind: tool.AccessOther, Specifier: sk.Name, InsideWorkingDirs: true}
	if len(sk.AllowedTools) > 0 || len(sk.Hooks) > 0 {
		// It widens what runs without asking (allowed-tools for the turn)
		// or adds hooks: a person approves it unless Skill(name) is allowed.
		a.Kind, a.InsideWorkingDirs = tool.AccessExternal, false
		var what []string
		if len(sk.AllowedTools) > 0 {
			what = append(what, "pre-approves "+strings.Join(sk.AllowedTools, ", ")+" for this turn")
		}
		if len(sk.Hooks) > 0 {
			what = append(what, "adds hooks for the rest of the session")
		}
		a.Reason = fmt.Sprintf("skill %q %s", sk.Name, strings.Join(what, " and "))
	}
	return a, nil
}

// Run implements tool.Tool: renders the skill (its !`cmd` lines run as
// nested Bash calls through the pipeline), registers its hooks, grants its
// allowed-tools for the turn and records the use.
func (t *Tool) Run(ctx context.Context, call *tool.Call, progress tool.Progress) (*tool.Result, error) {
	in, sk, err := t.resolve(call)
	if err != nil {
		return tool.ErrorResult(err.Error()), nil
	}
	sid := call.Env.SessionID()
	vars := Vars{SessionID: sid}
	if dirs := call.Env.WorkingDirs(); len(dirs) > 0 {
		vars.ProjectDir = dirs[0]
	}
	if t.o.Vars != nil {
		ov := t.o.Vars(call.Env)
		vars.Effort = ov.Effort
		if ov.ProjectDir != "" {
			vars.ProjectDir = ov.ProjectDir
		}
		if ov.SessionID != "" {
			vars.SessionID = ov.SessionID
		}
	}
	run := func(cmd string) string { return runNested(ctx, call.Nested, cmd) }
	text := Render(sk, in.Args, vars, run)
	if sk.Dir != "" {
		text = "Base directory for this skill: " + sk.Dir + "\n\n" + text
	}

	if len(sk.Hooks) > 0 && t.o.AddHooks != nil {
		if err := t.o.AddHooks(sid, sk.Name, sk.Hooks); err != nil {
			return tool.ErrorResult(fmt.Sprintf("skill %q was not loaded: registering its hooks failed: %v. Fix the hooks in %s", sk.Name, err, sk.Path)), nil
		}
	}
	if len(sk.AllowedTools) > 0 && t.o.Grant != nil {
		t.o.Grant(sid, sk.Name, append([]string(nil), sk.AllowedTools...))
	}
	if t.o.Used != nil {
		t.o.Used(sid, sk.Name)
	}
	if sk.Context == "fork" {
		return t.fork(ctx, call, sk, text, progress)
	}

	st := map[string]any{"success": true, "commandName": sk.Name, "status": "inline"}
	if len(sk.AllowedTools) > 0 {
		st["allowedTools"] = sk.AllowedTools
	}
	if sk.Model != "" {
		st["model"] = sk.Model
	}
	if sk.Effort != "" {
		st["effort"] = sk.Effort
	}
	structured, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("encoding the skill result: %w", err)
	}
	res := tool.TextResult(text)
	res.Structured = structured
	res.Display = "loaded skill " + sk.Name
	return res, nil
}

// fork runs a rendered context: fork skill as a sub-agent and answers as
// Claude Code does (agent.md §6).
func (t *Tool) fork(ctx context.Context, call *tool.Call, sk *Skill, text string, progress tool.Progress) (*tool.Result, error) {
	f, err := t.o.Fork(ctx, call, sk, text, progress)
	if err != nil {
		return tool.ErrorResult(fmt.Sprintf("skill %q could not start its forked agent: %v", sk.Name, err)), nil
	}
	st := map[string]any{"success": true, "commandName": sk.Name, "status": "forked", "agentId": f.AgentID, "result": f.Result}
	head := fmt.Sprintf("Skill %q completed (forked execution).", sk.Name)
	if f.Background {
		st["background"] = true
		head = fmt.Sprintf("Skill %q launched (forked execution, running in the background).", sk.Name)
	}
	structured, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("encoding the skill result: %w", err)
	}
	res := tool.TextResult(head + "\n" + f.Result)
	res.Structured = structured
	res.Display = "forked skill " + sk.Name
	return res, nil
}

// notRun are the nested-call statuses for which the command did not run.
var notRun = map[string]bool{"denied": true, "blocked": true, "invalid": true, "cancelled": true}

// runNested runs one !`cmd` as a Bash call through the pipeline and returns
// what the skill shows in its place.
func runNested(ctx context.Context, nested tool.NestedFunc, cmd string) string {
	notRunMsg := func(why string) string {
		return "[!`" + cmd + "` was not run: " + strings.TrimSpace(why) + "]"
	}
	if nested == nil {
		return notRunMsg("commands in skills need the tool pipeline, which is not available here")
	}
	input, err := json.Marshal(map[string]string{"command": cmd})
	if err != nil {
		return notRunMsg(err.Error())
	}
	res, err := nested(ctx, "Bash", input)
	if err != nil {
		return notRunMsg(err.Error())
	}
	if res == nil {
		return notRunMsg("no result")
	}
	var b strings.Builder
	for _, c := range res.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	if notRun[res.Display] {
		why := b.String()
		if why == "" {
			why = res.Display
		}
		return notRunMsg(why)
	}
	return b.String()
}
