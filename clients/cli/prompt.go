package cli

import (
	"bufio"
	"errors"
	"fmt"
	"strings"

	"github.com/tackle-agent/tackle/clients/client"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// prompter asks a person, on stderr and stdin (a terminal), to answer the
// permission requests of a session, one at a time, and sends the answers on
// the stream. Requests answered elsewhere are dropped from its queue. It is
// used by one goroutine (the command's event loop).
type prompter struct {
	a         *app
	s         *client.Stream
	sessionID string
	// before runs before a prompt is printed; after, once none is pending.
	before, after func()

	lines   chan string                   // lines typed on stdin, nil until the first prompt
	pending []*tacklev1.PermissionRequest // the first one is being asked
}

func newPrompter(a *app, s *client.Stream, sessionID string) *prompter {
	return &prompter{a: a, s: s, sessionID: sessionID}
}

// input is the channel of typed lines; nil (blocking forever in a select)
// for a nil prompter or before the first prompt.
func (p *prompter) input() <-chan string {
	if p == nil {
		return nil
	}
	return p.lines
}

// requested queues a request and asks it if nothing else is being asked.
func (p *prompter) requested(r *tacklev1.PermissionRequest) {
	for _, q := range p.pending {
		if q.GetRequestId() == r.GetRequestId() {
			return
		}
	}
	p.pending = append(p.pending, r)
	if len(p.pending) == 1 {
		p.ask()
	}
}

// ask prints the prompt for the first pending request and reads stdin.
func (p *prompter) ask() {
	r := p.pending[0]
	if p.before != nil {
		p.before()
	}
	input := r.GetInputJson()
	if rs := []rune(input); len(rs) > 400 {
		input = string(rs[:400]) + "…"
	}
	reason := r.GetReason()
	if reason == "" {
		reason = r.GetTool() + " needs your approval"
	}
	fmt.Fprintf(p.a.stderr, "\n%s\n  tool:  %s\n  input: %s\nAllow once? [y/N] ", reason, r.GetTool(), input)
	if p.lines == nil {
		p.lines = make(chan string)
		// This goroutine reads the terminal until the process exits. At
		// the end of input it answers "no" once.
		go func() {
			sc := bufio.NewScanner(p.a.stdin)
			for sc.Scan() {
				p.lines <- sc.Text()
			}
			p.lines <- ""
		}()
	}
}

// answer sends the person's answer to the request being asked.
func (p *prompter) answer(line string) error {
	if len(p.pending) == 0 {
		return nil
	}
	r := p.pending[0]
	p.pending = p.pending[1:]
	d := tacklev1.Decision_DECISION_DENY
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes", "a", "allow":
		d = tacklev1.Decision_DECISION_ALLOW_ONCE
	}
	err := p.s.Answer(&tacklev1.PermissionAnswer{SessionId: p.sessionID, RequestId: r.GetRequestId(), Decision: d})
	if err != nil && !errors.Is(err, client.ErrNotFound) {
		return fmt.Errorf("answering the permission request: %w", err)
	}
	p.next()
	return nil
}

// resolved drops a request answered elsewhere (or timed out).
func (p *prompter) resolved(r *tacklev1.PermissionResolved) {
	if r == nil {
		return
	}
	for i, q := range p.pending {
		if q.GetRequestId() != r.GetRequestId() {
			continue
		}
		p.pending = append(p.pending[:i], p.pending[i+1:]...)
		if i == 0 {
			fmt.Fprintf(p.a.stderr, "\n(answered elsewhere: %s)\n", r.GetDecision())
			p.next()
		}
		return
	}
}

// next asks the next pending request, or runs after when none is left.
func (p *prompter) next() {
	if len(p.pending) > 0 {
		p.ask()
	} else if p.after != nil {
		p.after()
	}
}
