package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// attachView is tackle attach for people: one line per call — its tool and
// main argument, its state, then its final status, duration and a short
// result. On a terminal the line of the call printed last is rewritten in
// place as the call goes on; elsewhere a call gets its line when it ends.
// Permission requests show their preview; other events print as attach
// -v prints them.
type attachView struct {
	a      *app
	w      io.Writer
	tty    bool
	width  int
	colour bool
	tree   *agentTree
	calls  map[string]*callLine // the session's calls not ended yet
	last   string               // the call whose line is the last one printed ("" none)
}

// callLine is what attach shows of one call.
type callLine struct {
	tool, arg string
	state     string
	output    string // its last output line, while it runs
}

func newAttachView(a *app, tree *agentTree) *attachView {
	w := a.stdout
	v := &attachView{a: a, w: w, tty: isTerminal(w), colour: a.colour(w), tree: tree, calls: map[string]*callLine{}}
	if v.tty {
		v.width = termWidth(w)
	}
	return v
}

// event shows one event.
func (v *attachView) event(e *tacklev1.Event) error {
	if lines, ok := v.tree.lines(e); ok {
		for _, l := range lines {
			v.println(l)
		}
		return nil
	}
	switch e.GetType() {
	case "turn_started":
		v.tree.broke()
		for _, c := range e.GetCalls() {
			cl := &callLine{tool: c.GetName(), arg: mainArgument(c.GetInputJson()), state: "queued"}
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
		v.tree.broke()
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
		v.tree.broke()
		p := e.GetPermission()
		who := p.GetTool()
		if ag := p.GetAgent(); ag != nil {
			who += " of agent " + agentName(ag.GetType(), ag.GetDescription()) + " (" + ag.GetId() + ")"
		}
		v.println(fmt.Sprintf("? %s waits for approval (request %s): %s", who, p.GetRequestId(), reasonLine(p)))
		writePreview(v.w, p, "    ", v.colour)
		v.last = ""
	case "permission_resolved":
		v.tree.broke()
		v.println("  " + resolutionText(e.GetResolution()))
	case "assistant_delta", "tool_results":
		// The message follows whole; the results are the calls' lines.
	case "prompt_started":
		v.tree.broke()
		v.println("» " + oneLine(e.GetPrompt().GetText()))
		v.last = ""
	case "assistant_message":
		var m struct {
			Content []struct{ Type, Text string } `json:"content"`
		}
		if json.Unmarshal([]byte(e.GetMessageJson()), &m) == nil {
			for _, b := range m.Content {
				if b.Type == "text" && strings.TrimSpace(b.Text) != "" {
					v.tree.broke()
					v.println(strings.TrimRight(b.Text, "\n"))
					v.last = ""
				}
			}
		}
	case "prompt_ended":
		v.tree.broke()
		p := e.GetPrompt()
		line := "  prompt ended: " + p.GetStopReason()
		if p.GetError() != "" {
			line += ": " + p.GetError()
		}
		v.println(line)
		v.last = ""
	default:
		v.last = ""
		return v.a.printEvent(e, false, v.tree)
	}
	return nil
}

// update redraws the line of a running call on a terminal when it is the
// last line printed; other calls wait for their result line.
func (v *attachView) update(id string, cl *callLine) {
	if v.tty && v.last == id {
		v.rewrite(v.render(cl, nil))
	}
}

// render is the line of a call: running (r nil) or ended with r.
func (v *attachView) render(cl *callLine, r *tacklev1.ToolResult) string {
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
func (v *attachView) println(s string) {
	fmt.Fprintln(v.w, s)
}

// rewrite replaces the last line printed (on a terminal).
func (v *attachView) rewrite(s string) {
	fmt.Fprintf(v.w, "\x1b[1A\r\x1b[K%s\n", s)
}

// shortResult is a result in a few words: "+3 −1" for an edit's diff,
// "denied by rule R" for a rule's denial, else its first line for people
// (cut to 100 characters).
func shortResult(r *tacklev1.ToolResult) string {
	if d := r.GetDisplay(); isDiff(d) && !r.GetIsError() {
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
