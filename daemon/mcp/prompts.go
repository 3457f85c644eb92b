package mcp

import (
	"context"
	"fmt"
	"sort"
	"strings"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Prompts returns the last known prompts of server, one of session
// sessionID's servers (refreshed on prompts/list_changed). A server that is
// not connected is an error naming its state.
func (m *Manager) Prompts(sessionID, server string) ([]*mcpsdk.Prompt, error) {
	c, err := m.sessionConn(sessionID, server)
	if err != nil {
		return nil, err
	}
	if st := c.Status(); st.State != Connected {
		return nil, fmt.Errorf("%s", notConnected(st))
	}
	return c.Prompts(), nil
}

// GetPrompt renders prompt name of server with args. The arguments are
// checked against the prompt's declaration first: a missing required
// argument or an argument the prompt does not declare is an error that
// lists what the prompt takes.
func (m *Manager) GetPrompt(ctx context.Context, sessionID, server, name string, args map[string]string) (*mcpsdk.GetPromptResult, error) {
	ps, err := m.Prompts(sessionID, server)
	if err != nil {
		return nil, err
	}
	var p *mcpsdk.Prompt
	for _, q := range ps {
		if q != nil && q.Name == name {
			p = q
			break
		}
	}
	if p == nil {
		return nil, &PromptError{fmt.Sprintf("MCP server %s has no prompt named %q (its prompts: %s)", server, name, promptNames(ps))}
	}
	if err := CheckPromptArgs(server, p, args); err != nil {
		return nil, &PromptError{err.Error()}
	}
	c, err := m.sessionConn(sessionID, server)
	if err != nil {
		return nil, err
	}
	var res *mcpsdk.GetPromptResult
	err = c.Do(ctx, func(ctx context.Context, cs *mcpsdk.ClientSession) error {
		r, err := cs.GetPrompt(ctx, &mcpsdk.GetPromptParams{Name: name, Arguments: args})
		res = r
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("getting prompt %s of MCP server %s: %w", name, server, err)
	}
	return res, nil
}

// PromptError is a prompt request the asker got wrong: no prompt of that
// name, or arguments it does not declare or lacks.
type PromptError struct{ msg string }

func (e *PromptError) Error() string { return e.msg }

// InvalidArgument marks the error for the daemon's API (server.codeOf).
func (e *PromptError) InvalidArgument() bool { return true }

// CheckPromptArgs reports a missing required argument or an undeclared one
// of prompt p of server, with the prompt's usage.
func CheckPromptArgs(server string, p *mcpsdk.Prompt, args map[string]string) error {
	declared := map[string]bool{}
	var missing []string
	for _, a := range p.Arguments {
		if a == nil {
			continue
		}
		declared[a.Name] = true
		if _, ok := args[a.Name]; a.Required && !ok {
			missing = append(missing, a.Name)
		}
	}
	var unknown []string
	for k := range args {
		if !declared[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	var problems []string
	if len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("missing required %s %s", plural(len(missing), "argument", "arguments"), strings.Join(missing, ", ")))
	}
	if len(unknown) > 0 {
		problems = append(problems, fmt.Sprintf("unknown %s %s", plural(len(unknown), "argument", "arguments"), strings.Join(unknown, ", ")))
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("prompt %s of MCP server %s: %s; usage: %s", p.Name, server, strings.Join(problems, "; "), PromptUsage(p))
}

// PromptUsage describes a prompt's arguments: "name a=… [b=…]" (optional
// arguments in brackets), or "name (no arguments)".
func PromptUsage(p *mcpsdk.Prompt) string {
	var b strings.Builder
	b.WriteString(p.Name)
	n := 0
	for _, a := range p.Arguments {
		if a == nil {
			continue
		}
		n++
		if a.Required {
			fmt.Fprintf(&b, " %s=…", a.Name)
		} else {
			fmt.Fprintf(&b, " [%s=…]", a.Name)
		}
	}
	if n == 0 {
		b.WriteString(" (no arguments)")
	}
	return b.String()
}

func promptNames(ps []*mcpsdk.Prompt) string {
	var names []string
	for _, p := range ps {
		if p != nil {
			names = append(names, p.Name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
