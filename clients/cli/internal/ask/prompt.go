// Package ask asks a person for the permissions a command's calls need, on
// the terminal (or /dev/tty) or as JSON answer lines, and runs a turn of tool
// calls with those prompts (call, batch).
package ask

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/tackle-agent/tackle/clients/cli/internal/cmdutil"
	"github.com/tackle-agent/tackle/clients/cli/internal/render"
	"github.com/tackle-agent/tackle/clients/client"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// Prompter asks a person, on stderr and stdin (a terminal), to answer the
// permission requests of a session, one at a time, and sends the answers on
// the stream: y allows once, a allows always (then asks where to save the
// rule), n denies, f denies with feedback for the model. Requests answered
// elsewhere are dropped from its queue. A sub-agent's request names the
// agent and is answered in root. It is used by one goroutine (the command's
// event loop).
type Prompter struct {
	a         *cmdutil.App
	s         *client.Stream
	sessionID string
	// in and out are the terminal the person answers on: stdin and stderr,
	// or /dev/tty when stdin carries the input (see PromptIO).
	In  io.Reader
	Out io.Writer
	// root is the session a sub-agent's request waits in (its tree's
	// root); "" for sessionID.
	Root string
	// before runs before a prompt is printed; after, once none is pending.
	Before, after func()

	Lines   chan string                   // lines typed on stdin, nil until the first prompt
	Pending []*tacklev1.PermissionRequest // the first one is being asked
	stage   string                        // "" (the choice), "scope" or "feedback"
	always  map[string]bool               // requests answered "always" here, until resolved
}

// NewPrompter returns the prompter of one command's event loop, answering the
// requests of sessionID (and of its sub-agents) on stream s.
func NewPrompter(a *cmdutil.App, s *client.Stream, sessionID string) *Prompter {
	return &Prompter{a: a, s: s, sessionID: sessionID, In: a.Stdin, Out: a.Stderr}
}

// PromptIO finds the terminal permission prompts use: stdin and stderr
// when stdin is free (it carries no input) and a terminal; else, when
// stdin is a file of the process (a pipe or a redirection: tackle call X -,
// tackle run -), the controlling terminal, /dev/tty, if there is one. ok is
// false when there is no terminal to ask on; closeTTY closes what it
// opened.
func PromptIO(a *cmdutil.App, stdinFree bool) (in io.Reader, out io.Writer, closeTTY func(), ok bool) {
	if stdinFree && cmdutil.IsTerminal(a.Stdin) {
		return a.Stdin, a.Stderr, func() {}, true
	}
	if _, isFile := a.Stdin.(*os.File); !isFile {
		return nil, nil, nil, false
	}
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return nil, nil, nil, false
	}
	if !cmdutil.IsTerminal(tty) {
		tty.Close()
		return nil, nil, nil, false
	}
	return tty, tty, func() { tty.Close() }, true
}

// Input is the channel of typed lines; nil (blocking forever in a select)
// for a nil prompter or before the first prompt.
func (p *Prompter) Input() <-chan string {
	if p == nil {
		return nil
	}
	return p.Lines
}

// Requested queues a request and asks it if nothing else is being asked.
func (p *Prompter) Requested(r *tacklev1.PermissionRequest) {
	for _, q := range p.Pending {
		if q.GetRequestId() == r.GetRequestId() {
			return
		}
	}
	p.Pending = append(p.Pending, r)
	if len(p.Pending) == 1 {
		p.ask()
	}
}

// ask prints the prompt for the first pending request and reads stdin.
func (p *Prompter) ask() {
	r := p.Pending[0]
	p.stage = ""
	if p.Before != nil {
		p.Before()
	}
	reason := render.ReasonLine(r)
	if reason == "" {
		reason = r.GetTool() + " needs your approval"
	}
	if ag := r.GetAgent(); ag != nil {
		reason = fmt.Sprintf("Agent %s wants to use %s: %s", render.AgentRefName(ag), r.GetTool(), reason)
		if id := ag.GetId(); id != "" {
			reason += fmt.Sprintf("\n  agent: %s (tackle attach --session %s shows its transcript)", id, id)
		}
	}
	choices := "  [y] yes, once"
	if rule := r.GetAlwaysRule(); rule != "" {
		choices += "   [a] yes, always allow " + rule
	}
	choices += "   [n] no   [f] no, and tell the model why"
	fmt.Fprintf(p.Out, "\n%s\n  tool:  %s\n", reason, r.GetTool())
	render.WritePreview(p.Out, r, "    ", p.a.Colour(p.Out))
	fmt.Fprintf(p.Out, "%s\nAnswer [y/%sn/f, default n]: ", choices, map[bool]string{true: "a/", false: ""}[r.GetAlwaysRule() != ""])
	if p.Lines == nil {
		p.Lines = make(chan string)
		// This goroutine reads the terminal until the process exits. At
		// the end of input it answers "no" once.
		go func() {
			sc := bufio.NewScanner(p.In)
			for sc.Scan() {
				p.Lines <- sc.Text()
			}
			p.Lines <- ""
		}()
	}
}

// Answer takes one typed line for the request being asked: a choice, a
// scope or feedback. Once the answer is complete it is sent.
func (p *Prompter) Answer(line string) error {
	if len(p.Pending) == 0 {
		return nil
	}
	r := p.Pending[0]
	word := strings.ToLower(strings.TrimSpace(line))
	ans := &tacklev1.PermissionAnswer{SessionId: AnswerSession(r, p.sessionID, p.Root), RequestId: r.GetRequestId(), Decision: tacklev1.Decision_DECISION_DENY}
	switch p.stage {
	case "scope":
		switch word {
		case "s", "session":
			ans.Scope = tacklev1.Scope_SCOPE_SESSION
		case "", "p", "project":
			ans.Scope = tacklev1.Scope_SCOPE_PROJECT
		case "u", "user":
			ans.Scope = tacklev1.Scope_SCOPE_USER
		default:
			fmt.Fprintf(p.Out, "Save %s for [s]ession, [p]roject or [u]ser? [p]: ", r.GetAlwaysRule())
			return nil
		}
		ans.Decision = tacklev1.Decision_DECISION_ALLOW_ALWAYS
	case "feedback":
		ans.Feedback = strings.TrimSpace(line)
	default:
		switch word {
		case "y", "yes":
			ans.Decision = tacklev1.Decision_DECISION_ALLOW_ONCE
		case "a", "always":
			if r.GetAlwaysRule() == "" {
				fmt.Fprint(p.Out, "This request cannot be allowed always. Answer [y/n/f]: ")
				return nil
			}
			p.stage = "scope"
			fmt.Fprintf(p.Out, "Save %s for [s]ession, [p]roject or [u]ser? [p]: ", r.GetAlwaysRule())
			return nil
		case "f", "feedback":
			p.stage = "feedback"
			fmt.Fprint(p.Out, "Tell the model what to do instead: ")
			return nil
		}
	}
	p.Pending = p.Pending[1:]
	p.stage = ""
	if ans.Decision == tacklev1.Decision_DECISION_ALLOW_ALWAYS {
		if p.always == nil {
			p.always = map[string]bool{}
		}
		p.always[r.GetRequestId()] = true
	}
	err := p.s.Answer(ans)
	if err != nil && !errors.Is(err, client.ErrNotFound) {
		return fmt.Errorf("answering the permission request: %w", err)
	}
	p.next()
	return nil
}

// AnswerSession is the session an answer to r goes to: a sub-agent's
// request (one that names its agent) waits in root, the session at the top
// of its tree, where the daemon announced it; every other request waits in
// session.
func AnswerSession(r *tacklev1.PermissionRequest, session, root string) string {
	if r.GetAgent() != nil && root != "" {
		return root
	}
	return session
}

// PermissionAsker names what asks a request in a notice: its tool, and
// the sub-agent that calls it.
func PermissionAsker(r *tacklev1.PermissionRequest) string {
	if ag := r.GetAgent(); ag != nil {
		return r.GetTool() + " of agent " + render.AgentRefName(ag)
	}
	return r.GetTool()
}

// RootOf is the root of the tree of the snapshot's session: itself unless
// it is a sub-agent's.
func RootOf(snap *tacklev1.Snapshot, sid string) string {
	if r := snap.GetSession().GetAgent().GetRootSessionId(); r != "" {
		return r
	}
	return sid
}

// Resolved drops a request answered elsewhere (or timed out), and says
// what an "always" answer given here saved, and where.
func (p *Prompter) Resolved(r *tacklev1.PermissionResolved) {
	if r == nil {
		return
	}
	if r.GetDecision() == "allow_always" && p.always[r.GetRequestId()] {
		delete(p.always, r.GetRequestId())
		fmt.Fprintf(p.Out, "tackle: %s\n", savedText(r))
	}
	for i, q := range p.Pending {
		if q.GetRequestId() != r.GetRequestId() {
			continue
		}
		p.Pending = append(p.Pending[:i], p.Pending[i+1:]...)
		if i == 0 {
			by := ""
			if n := r.GetClientName(); n != "" {
				by = " by " + n
			}
			fmt.Fprintf(p.Out, "\n(answered elsewhere%s: %s)\n", by, r.GetDecision())
			p.next()
		}
		return
	}
}

// next asks the next pending request, or runs after when none is left.
func (p *Prompter) next() {
	p.stage = ""
	if len(p.Pending) > 0 {
		p.ask()
	} else if p.after != nil {
		p.after()
	}
}

// jsonAnswer is one line of `tackle attach --json`'s stdin.
type jsonAnswer struct {
	Answer   string `json:"answer"`
	Option   string `json:"option"`
	Feedback string `json:"feedback"`
	Scope    string `json:"scope"`
	// Session is the request's session (default: the attached one).
	Session string `json:"session"`
}

// ReadJSONAnswers reads answer lines from stdin until its end and hands
// them over on the returned channel (closed at the end). Blank lines are skipped.
func ReadJSONAnswers(a *cmdutil.App, done <-chan struct{}) <-chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(a.Stdin)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" {
				continue
			}
			select {
			case ch <- line:
			case <-done:
				return
			}
		}
	}()
	return ch
}

// SendJSONAnswer parses one answer line and sends it on s, to the
// session sessionFor gives for its request id unless the line names one. A
// bad line is reported on stderr and stdout (as {"type":"answer_error"});
// the stream goes on.
func SendJSONAnswer(a *cmdutil.App, s *client.Stream, sessionFor func(requestID string) string, line string) error {
	var in jsonAnswer
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	err := dec.Decode(&in)
	if err == nil && in.Answer == "" {
		err = errors.New(`"answer" (the request id) is missing`)
	}
	var ans *tacklev1.PermissionAnswer
	if err == nil {
		sid := sessionFor(in.Answer)
		if in.Session != "" {
			sid = in.Session
		}
		ans, err = BuildAnswer(sid, in.Answer, strings.ReplaceAll(in.Option, "-", "_"), in.Scope, in.Feedback)
	}
	if err == nil {
		err = s.Answer(ans)
		if err != nil && !errors.Is(err, client.ErrNotFound) {
			return fmt.Errorf("answering the permission request: %w", err)
		}
	}
	if err != nil {
		fmt.Fprintf(a.Stderr, "tackle: answer %s: %v\n", render.Clip(line, 200), err)
		return a.PrintJSONLine(map[string]string{"type": "answer_error", "line": line, "error": err.Error()})
	}
	return nil
}

// savedText says what an allow_always answer saved and where: "saved
// Bash(npm test:*) for the project in /p/.tackle/settings.local.json
// (tackle permissions rules lists it)".
func savedText(r *tacklev1.PermissionResolved) string {
	rules := strings.Join(r.GetRules(), ", ")
	if rules == "" {
		return "allowed this once: no rule could be saved (see the notice)"
	}
	where := "for this session (the daemon keeps it; it ends with the session)"
	switch r.GetScope() {
	case "project":
		where = "for the project in " + r.GetPath()
	case "user":
		where = "for you, in every project, in " + r.GetPath()
	}
	return fmt.Sprintf("saved %s %s (tackle permissions rules lists it)", rules, where)
}

// scopeValues maps --scope to the protobuf scope.
var scopeValues = map[string]tacklev1.Scope{
	"":        tacklev1.Scope_SCOPE_UNSPECIFIED,
	"session": tacklev1.Scope_SCOPE_SESSION,
	"project": tacklev1.Scope_SCOPE_PROJECT,
	"user":    tacklev1.Scope_SCOPE_USER,
}

// answerDecisions maps the answer words (of the CLI and of attach --json)
// to the protobuf decision.
var answerDecisions = map[string]tacklev1.Decision{
	"allow":              tacklev1.Decision_DECISION_ALLOW_ONCE,
	"allow_once":         tacklev1.Decision_DECISION_ALLOW_ONCE,
	"allow-once":         tacklev1.Decision_DECISION_ALLOW_ONCE,
	"allow-always":       tacklev1.Decision_DECISION_ALLOW_ALWAYS,
	"allow_always":       tacklev1.Decision_DECISION_ALLOW_ALWAYS,
	"deny":               tacklev1.Decision_DECISION_DENY,
	"deny_with_feedback": tacklev1.Decision_DECISION_DENY,
}

// BuildAnswer checks an answer's words and builds it. An allow-always
// answer without a scope is saved for the project.
func BuildAnswer(sessionID, requestID, option, scope, feedback string) (*tacklev1.PermissionAnswer, error) {
	d, ok := answerDecisions[option]
	if !ok {
		return nil, fmt.Errorf("unknown answer %q: use allow, allow-always or deny", option)
	}
	sc, ok := scopeValues[scope]
	if !ok {
		return nil, fmt.Errorf("unknown scope %q: use session, project or user", scope)
	}
	if d != tacklev1.Decision_DECISION_ALLOW_ALWAYS && scope != "" {
		return nil, fmt.Errorf("a scope only goes with allow-always")
	}
	if d == tacklev1.Decision_DECISION_ALLOW_ALWAYS && sc == tacklev1.Scope_SCOPE_UNSPECIFIED {
		sc = tacklev1.Scope_SCOPE_PROJECT
	}
	if d != tacklev1.Decision_DECISION_DENY && feedback != "" {
		return nil, fmt.Errorf("feedback only goes with deny")
	}
	return &tacklev1.PermissionAnswer{SessionId: sessionID, RequestId: requestID, Decision: d, Scope: sc, Feedback: feedback}, nil
}
