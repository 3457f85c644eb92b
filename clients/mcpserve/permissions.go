package mcpserve

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// A permission prompt of one of our calls is a normal tackle prompt: every
// controller attached to the session sees it and the first answer wins.
// When the MCP client can elicit, it is asked too; an answer from
// elsewhere (or the timeout) withdraws the elicitation, and whatever it
// returns late is dropped.

// choice is one answer offered in the elicitation.
type choice struct {
	value, title string
	decision     tacklev1.Decision
	scope        tacklev1.Scope
}

// choices are the answers to offer for p: allow once, always (when tackle
// offers it, with the rule and scope it would save), deny.
func choices(p *tacklev1.PermissionRequest) []choice {
	out := []choice{{value: "allow_once", title: "Allow once", decision: tacklev1.Decision_DECISION_ALLOW_ONCE}}
	for _, o := range p.GetOptions() {
		if o.GetOption() != "allow_always" {
			continue
		}
		title := "Always allow"
		if r := o.GetRule(); r != "" {
			title += " " + r
		}
		if sc := scopeName(o.GetScope()); sc != "" {
			title += " (" + sc + ")"
		}
		out = append(out, choice{value: "allow_always", title: title, decision: tacklev1.Decision_DECISION_ALLOW_ALWAYS, scope: o.GetScope()})
		break // the first scope offered, as tackle orders them
	}
	return append(out, choice{value: "deny", title: "Deny", decision: tacklev1.Decision_DECISION_DENY})
}

func scopeName(s tacklev1.Scope) string {
	switch s {
	case tacklev1.Scope_SCOPE_SESSION:
		return "this session"
	case tacklev1.Scope_SCOPE_PROJECT:
		return "this project"
	case tacklev1.Scope_SCOPE_USER:
		return "every project"
	}
	return ""
}

// canElicit reports whether the client declared form elicitation.
func canElicit(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return false
	}
	e := p.Capabilities.Elicitation
	return e.Form != nil || e.URL == nil // {} means form, before 2025-11-25
}

// permissionRequested asks the MCP client about a prompt of one of our
// calls (or of a sub-agent one of them started).
func (b *bridge) permissionRequested(l *link, p *tacklev1.PermissionRequest) {
	if p == nil {
		return
	}
	b.mu.Lock()
	c := b.calls[p.GetCallId()]
	if c == nil && p.GetAgent() != nil {
		c = b.calls[p.GetAgent().GetParentCallId()]
	}
	_, open := b.asks[p.GetRequestId()]
	b.mu.Unlock()
	if c == nil || open {
		return // another client's call: it asks its own person
	}
	ss := b.session()
	if !canElicit(ss) {
		deadline := ""
		if d := p.GetDeadline(); d != nil {
			deadline = fmt.Sprintf(" until %s", d.AsTime().Local().Format("15:04:05"))
		}
		b.tell(ss, "warning", fmt.Sprintf("%s waits for approval%s: %s. This MCP client cannot be asked (no elicitation); answer with `tackle permissions answer %s allow` (or deny), else it is denied.",
			c.served, deadline, reasonOf(p), p.GetRequestId()))
		return
	}
	ctx, cancel := context.WithCancel(b.ctx)
	b.mu.Lock()
	b.asks[p.GetRequestId()] = cancel
	b.mu.Unlock()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer func() {
			b.mu.Lock()
			delete(b.asks, p.GetRequestId())
			b.mu.Unlock()
			cancel()
		}()
		b.ask(ctx, ss, l, c, p)
	}()
}

// ask puts p to the client and answers tackle with the choice. A
// declined or dismissed form is a denial, and so is an answer that cannot
// be understood (one that fails the form's schema, an error): a
// permission that cannot be asked is denied at once, never granted, nor
// left to wait for the timeout. A withdrawn one (answered elsewhere,
// timed out) answers nothing.
func (b *bridge) ask(ctx context.Context, ss *mcp.ServerSession, l *link, c *call, p *tacklev1.PermissionRequest) {
	cs := choices(p)
	version := ""
	if ip := ss.InitializeParams(); ip != nil {
		version = ip.ProtocolVersion
	}
	res, err := ss.Elicit(ctx, &mcp.ElicitParams{Mode: "form", Message: askMessage(c, p), RequestedSchema: choiceSchema(version, cs)})
	if ctx.Err() != nil {
		return
	}
	answer := &tacklev1.PermissionAnswer{SessionId: b.sid, RequestId: p.GetRequestId(), Decision: tacklev1.Decision_DECISION_DENY}
	switch {
	case err != nil:
		answer.Feedback = fmt.Sprintf("tackle denied the call: the MCP client's answer to the permission prompt could not be understood (%v)", err)
		b.logf("asking the MCP client about %s: %v; denied", c.served, err)
	case res.Action == "accept":
		v, _ := res.Content["decision"].(string)
		known := false
		for _, ch := range cs {
			if ch.value == v {
				answer.Decision, answer.Scope, known = ch.decision, ch.scope, true
			}
		}
		if !known {
			answer.Feedback = fmt.Sprintf("tackle denied the call: the MCP client answered the permission prompt with %q, which is not one of its choices", v)
			b.logf("the MCP client answered the permission prompt of %s with %q; denied", c.served, v)
		}
	}
	if cur := b.currentLink(); cur != nil {
		l = cur
	}
	if err := l.st.Answer(answer); err != nil {
		b.logf("answering the permission request of %s: %v", c.served, err)
	}
}

// permissionResolved withdraws the elicitation of a request answered
// (here or elsewhere), timed out or cancelled.
func (b *bridge) permissionResolved(r *tacklev1.PermissionResolved) {
	b.mu.Lock()
	cancel := b.asks[r.GetRequestId()]
	delete(b.asks, r.GetRequestId())
	b.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// choiceSchema is the form: one required string property, "decision",
// whose values are the choices: titled (oneOf of consts) from protocol
// 2025-11-25 on, enum with enumNames before.
func choiceSchema(version string, cs []choice) map[string]any {
	prop := map[string]any{"type": "string", "title": "Decision", "description": "What tackle should do with this call"}
	if version >= "2025-11-25" {
		var one []any
		for _, c := range cs {
			one = append(one, map[string]any{"const": c.value, "title": c.title})
		}
		prop["oneOf"] = one
	} else {
		var values, names []any
		for _, c := range cs {
			values, names = append(values, c.value), append(names, c.title)
		}
		prop["enum"], prop["enumNames"] = values, names
	}
	return map[string]any{
		"type":       "object",
		"properties": map[string]any{"decision": prop},
		"required":   []any{"decision"},
	}
}

// maxInputShown bounds the input an elicitation message shows.
const maxInputShown = 1000

// askMessage tells the person what is asked: the tool, who asks, why,
// the input and how long the question stays open.
func askMessage(c *call, p *tacklev1.PermissionRequest) string {
	var sb strings.Builder
	name := c.served
	if p.GetTool() != "" && p.GetTool() != c.name {
		name = p.GetTool() // a sub-agent's call
	}
	fmt.Fprintf(&sb, "tackle: allow %s?", name)
	if a := p.GetAgent(); a != nil {
		fmt.Fprintf(&sb, " (asked by sub-agent %s: %s)", a.GetType(), a.GetDescription())
	}
	fmt.Fprintf(&sb, "\n%s", reasonOf(p))
	if in := strings.TrimSpace(p.GetInputJson()); in != "" && in != "{}" {
		if len(in) > maxInputShown {
			in = in[:maxInputShown] + "…"
		}
		fmt.Fprintf(&sb, "\nInput: %s", in)
	}
	if d := p.GetDeadline(); d != nil {
		fmt.Fprintf(&sb, "\nUnanswered, it is denied in %s.", time.Until(d.AsTime()).Round(time.Second))
	}
	return sb.String()
}

func reasonOf(p *tacklev1.PermissionRequest) string {
	if r := strings.TrimSpace(p.GetReason()); r != "" {
		return r
	}
	return "no rule allows it"
}
