package render

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/tackle-agent/tackle/clients/cli/internal/cmdutil"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// AttachView is tackle attach for people: one line per call — its tool and
// main argument, its state, then its final status, duration and a short
// result. On a terminal the line of the call printed last is rewritten in
// place as the call goes on; elsewhere a call gets its line when it ends.
// Permission requests show their preview; other events print as attach
// -v prints them.
type AttachView struct {
	a      *cmdutil.App
	w      io.Writer
	tty    bool
	width  int
	colour bool
	tree   *AgentTree
	calls  map[string]*callLine // the session's calls not ended yet
	last   string               // the call whose line is the last one printed ("" none)
}

// callLine is what attach shows of one call.
type callLine struct {
	tool, arg string
	state     string
	output    string // its last output line, while it runs
}

// NewAttachView returns the view that writes a's stdout, drawing the
// sub-agents of tree.
func NewAttachView(a *cmdutil.App, tree *AgentTree) *AttachView {
	w := a.Stdout
	v := &AttachView{a: a, w: w, tty: cmdutil.IsTerminal(w), colour: a.Colour(w), tree: tree, calls: map[string]*callLine{}}
	if v.tty {
		v.width = termWidth(w)
	}
	return v
}

// Event shows one event.
func (v *AttachView) Event(e *tacklev1.Event) error {
	if lines, ok := v.tree.Lines(e); ok {
		for _, l := range lines {
			v.println(l)
		}
		return nil
	}
	switch e.GetType() {
	case "turn_started":
		v.tree.Broke()
		for _, c := range e.GetCalls() {
			cl := &callLine{tool: c.GetName(), arg: MainArgument(c.GetInputJson()), state: "queued"}
			v.calls[c.GetId()] = cl
			if v.tty {
				v.println(v.render(cl, nil))
				v.last = c.GetId()
			}
		}
	case "call_state":
		if cl := v.calls[e.GetCallId()]; cl != nil {
			cl.state = strings.ReplaceAll(e.GetState(), "_", " ")
			v.update(e.GetCallId(), cl)
		}
	case "call_progress":
		if cl := v.calls[e.GetCallId()]; cl != nil && v.tty {
			lines := strings.Split(strings.TrimRight(strings.ReplaceAll(e.GetText(), "\r\n", "\n"), "\n"), "\n")
			if l := lines[len(lines)-1]; strings.TrimSpace(l) != "" {
				if i := strings.LastIndexByte(l, '\r'); i >= 0 {
					l = l[i+1:]
				}
				cl.output = strings.TrimSpace(l)
			}
			v.update(e.GetCallId(), cl)
		}
	case "call_result":
		v.tree.Broke()
		r := e.GetResult()
		id := e.GetCallId()
		cl := v.calls[id]
		if cl == nil { // it started before attach did
			cl = &callLine{tool: r.GetName()}
		}
		delete(v.calls, id)
		line := v.render(cl, r)
		if v.tty && v.last == id {
			v.rewrite(line)
		} else {
			v.println(line)
		}
		v.last = ""
	case "turn_ended":
	case "permission_requested":
		v.tree.Broke()
		p := e.GetPermission()
		who := p.GetTool()
		if ag := p.GetAgent(); ag != nil {
			who += " of agent " + AgentName(ag.GetType(), ag.GetDescription()) + " (" + ag.GetId() + ")"
		}
		v.println(fmt.Sprintf("? %s waits for approval (request %s): %s", who, p.GetRequestId(), ReasonLine(p)))
		WritePreview(v.w, p, "    ", v.colour)
		v.last = ""
	case "permission_resolved":
		v.tree.Broke()
		v.println("  " + resolutionText(e.GetResolution()))
	case "assistant_delta", "tool_results":
		// The message follows whole; the results are the calls' lines.
	case "prompt_started":
		v.tree.Broke()
		v.println("» " + OneLine(e.GetPrompt().GetText()))
		v.last = ""
	case "assistant_message":
		var m struct {
			Content []struct{ Type, Text string } `json:"content"`
		}
		if json.Unmarshal([]byte(e.GetMessageJson()), &m) == nil {
			for _, b := range m.Content {
				if b.Type == "text" && strings.TrimSpace(b.Text) != "" {
					v.tree.Broke()
					v.println(strings.TrimRight(b.Text, "\n"))
					v.last = ""
				}
			}
		}
	case "prompt_ended":
		v.tree.Broke()
		p := e.GetPrompt()
		line := "  prompt ended: " + p.GetStopReason()
		if p.GetError() != "" {
			line += ": " + p.GetError()
		}
		v.println(line)
		v.last = ""
	default:
		v.last = ""
		return PrintEvent(v.a, e, false, v.tree)
	}
	return nil
}

// update redraws the line of a running call on a terminal when it is the
// last line printed; other calls wait for their result line.
func (v *AttachView) update(id string, cl *callLine) {
	if v.tty && v.last == id {
		v.rewrite(v.render(cl, nil))
	}
}

// render is the line of a call: running (r nil) or ended with r.
func (v *AttachView) render(cl *callLine, r *tacklev1.ToolResult) string {
	head := cl.tool
	if cl.arg != "" {
		head += " " + cl.arg
	}
	var line string
	if r == nil {
		line = "● " + head + " · " + cl.state
		if cl.output != "" {
			line += " · " + cl.output
		}
	} else {
		mark := "✓"
		if r.GetIsError() {
			mark = "✗"
		}
		line = fmt.Sprintf("%s %s · %s · %s", mark, head, r.GetStatus(), elapsed(time.Duration(r.GetDurationMs())*time.Millisecond))
		if s := shortResult(r); s != "" {
			line += " · " + s
		}
	}
	if v.tty {
		return cutWidth(line, v.width-1)
	}
	return line
}

// println prints a line.
func (v *AttachView) println(s string) {
	fmt.Fprintln(v.w, s)
}

// rewrite replaces the last line printed (on a terminal).
func (v *AttachView) rewrite(s string) {
	fmt.Fprintf(v.w, "\x1b[1A\r\x1b[K%s\n", s)
}

// shortResult is a result in a few words: "+3 −1" for an edit's diff,
// "denied by rule R" for a rule's denial, else its first line for people
// (cut to 100 characters).
func shortResult(r *tacklev1.ToolResult) string {
	if d := r.GetDisplay(); IsDiff(d) && !r.GetIsError() {
		return diffStat(d)
	}
	if r.GetStatus() == "denied" {
		for _, b := range r.GetContent() {
			if _, rest, ok := strings.Cut(b.GetText(), "has been denied: the deny rule "); ok {
				rule, _, _ := strings.Cut(rest, " (")
				return "denied by rule " + rule
			}
		}
	}
	if d := r.GetDisplay(); exitStatusRe.MatchString(d) {
		// A command: its first lines of output, then its exit status.
		for _, b := range r.GetContent() {
			if t := strings.TrimSpace(forPeople(b.GetText())); t != "" && !strings.HasPrefix(t, "Exit code ") {
				lines := strings.Split(t, "\n")
				if n := len(lines); n > 1 && strings.HasPrefix(lines[n-1], "Exit code ") {
					lines = lines[:n-1]
				}
				head := strings.Join(lines[:min(2, len(lines))], " ⏎ ")
				if len(lines) > 2 {
					head += fmt.Sprintf(" (+%d lines)", len(lines)-2)
				}
				return cutWidth(head, 100) + " · " + d
			}
		}
		return d
	}
	return cutWidth(resultSummary(r), 100)
}

// exitStatusRe matches a command's result display: "exit 0".
var exitStatusRe = regexp.MustCompile(`^exit -?\d+$`)

// diffStat is "+A −D": the lines a unified diff adds and deletes.
func diffStat(d string) string {
	add, del := 0, 0
	for _, l := range strings.Split(d, "\n") {
		switch {
		case strings.HasPrefix(l, "+++ "), strings.HasPrefix(l, "--- "):
		case strings.HasPrefix(l, "+"):
			add++
		case strings.HasPrefix(l, "-"):
			del++
		}
	}
	return fmt.Sprintf("+%d −%d", add, del)
}

// PrintEvent prints one event: a JSON line, or a line for people, with
// sub-agents drawn under their Agent calls by tree (nil: not drawn).
func PrintEvent(a *cmdutil.App, e *tacklev1.Event, asJSON bool, tree *AgentTree) error {
	if asJSON {
		return a.PrintJSONLine(eventToJSON(e))
	}
	w := a.Stdout
	if tree != nil {
		if lines, ok := tree.Lines(e); ok {
			for _, l := range lines {
				fmt.Fprintln(w, l)
			}
			return nil
		}
		defer tree.Broke()
	}
	ts := ""
	if e.GetTime() != nil {
		ts = e.GetTime().AsTime().Local().Format("15:04:05") + " "
	}
	head := fmt.Sprintf("#%d %s%s", e.GetSeq(), ts, e.GetType())
	call := e.GetTool()
	if e.GetCallId() != "" {
		call += "(" + e.GetCallId() + ")"
	}
	switch e.GetType() {
	case "turn_started":
		names := make([]string, 0, len(e.GetCalls()))
		for _, c := range e.GetCalls() {
			names = append(names, c.GetName())
		}
		fmt.Fprintf(w, "%s %s: %s\n", head, e.GetTurnId(), strings.Join(names, ", "))
	case "call_state":
		fmt.Fprintf(w, "%s %s %s\n", head, call, e.GetState())
	case "call_progress", "notice":
		fmt.Fprintf(w, "%s %s %s\n", head, call, strings.TrimRight(e.GetText(), "\n"))
	case "call_result":
		r := e.GetResult()
		fmt.Fprintf(w, "%s %s %s (%d ms)\n", head, call, r.GetStatus(), r.GetDurationMs())
		if IsDiff(r.GetDisplay()) {
			WriteDiff(w, r.GetDisplay(), a.Colour(w))
		} else if s := resultSummary(r); s != "" {
			fmt.Fprintf(w, "    %s\n", s)
		}
	case "permission_requested":
		p := e.GetPermission()
		if ag := p.GetAgent(); ag != nil {
			call += " of agent " + AgentName(ag.GetType(), ag.GetDescription()) + " (" + ag.GetId() + ")"
		}
		fmt.Fprintf(w, "%s %s waits for approval (request %s): %s\n", head, call, p.GetRequestId(), ReasonLine(p))
		WritePreview(w, p, "    ", a.Colour(w))
		if r := p.GetAlwaysRule(); r != "" {
			fmt.Fprintf(w, "    allow always would save %s\n", r)
		}
	case "permission_resolved":
		fmt.Fprintf(w, "%s %s\n", head, resolutionText(e.GetResolution()))
	case "hook_ran":
		h := e.GetHookRun()
		what := h.GetHookEvent()
		if h.GetTool() != "" {
			what += " " + h.GetTool()
		}
		line := fmt.Sprintf("%s hook %s %s: %s", head, h.GetHook(), what, h.GetOutcome())
		if h.GetReason() != "" {
			line += ": " + FirstLine(h.GetReason())
		}
		fmt.Fprintln(w, line)
	case "session_updated":
		s := e.GetSession()
		var parts []string
		if s.GetCwd() != "" {
			parts = append(parts, "cwd "+s.GetCwd())
		}
		if s.GetPermissionMode() != "" {
			parts = append(parts, "mode "+s.GetPermissionMode())
		}
		if s.GetTodosJson() != "" {
			parts = append(parts, "todos updated")
		}
		fmt.Fprintf(w, "%s %s\n", head, strings.Join(parts, ", "))
	case "todos_updated":
		todos := e.GetSession().GetTodosJson()
		fmt.Fprintf(w, "%s %s\n", head, TodoCounts(todos))
		WriteTodos(w, todos, "    ", cmdutil.IsTerminal(w))
	case "shell_updated":
		fmt.Fprintf(w, "%s %s\n", head, ShellLine(e.GetShell()))
	default:
		fmt.Fprintf(w, "%s %s\n", head, e.GetTurnId())
	}
	return nil
}

// resolutionText is "request R: DECISION by CLIENT (ID) for SCOPE:
// FEEDBACK", the parts there are.
func resolutionText(r *tacklev1.PermissionResolved) string {
	by := ""
	if r.GetClientId() != "" {
		by = " by " + r.GetClientId()
		if n := r.GetClientName(); n != "" {
			by = " by " + n + " (" + r.GetClientId() + ")"
		}
	}
	if sc := r.GetScope(); sc != "" {
		by += " for " + sc
	}
	if rules := r.GetRules(); len(rules) > 0 {
		by += ": saved " + strings.Join(rules, ", ")
		if p := r.GetPath(); p != "" {
			by += " in " + p
		}
	}
	if f := r.GetFeedback(); f != "" {
		by += ": " + f
	}
	return fmt.Sprintf("request %s: %s%s", r.GetRequestId(), r.GetDecision(), by)
}
