// Package chat is `tackle chat`: a conversation with the session's agent,
// line by line on a pipe or in a terminal UI with history.
package chat

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/tackle-agent/tackle/clients/cli/internal/ask"
	"github.com/tackle-agent/tackle/clients/cli/internal/cmdutil"
	"github.com/tackle-agent/tackle/clients/cli/internal/render"
	"github.com/tackle-agent/tackle/clients/client"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// This file is tackle chat: a conversation with a session's agent. The chat
// loop (one goroutine) owns everything: it sends prompts, renders the
// session's events and runs the slash commands. What it prints and what
// the person types go through a chatUI: the terminal UI of chat_tui.go on a
// terminal, plain lines otherwise (chatLines, below).

// chatFlags are the flags of tackle chat.
type chatFlags struct {
	cmdutil.SessionFlags
	model string
	mode  string
}

// Command is `tackle chat`: a conversation with the session's agent in the terminal.
func Command(a *cmdutil.App) *cobra.Command {
	var f chatFlags
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "Talk with the session's agent in the terminal",
		Long: `A conversation with the session's agent: each line you type is a prompt.
The answer streams as it comes, each tool call is one line (its name and main
argument), edits print as diffs, permission requests are asked inline
(y once, a always, n no, f no with feedback for the model), and the todo
list shows when it changes. Up and Down recall earlier lines.

Ctrl-C cancels the running prompt; Ctrl-C twice, Ctrl-D on an empty line or
/exit leaves (a prompt still running goes on in the daemon).

Every client of the session sees the same conversation: a second tackle chat
--session ID shows the prompts others send and their answers live, and what
it types while a prompt runs is queued and reaches the model with that
prompt's next request.

Commands:
` + chatHelp + `
When stdin is not a terminal, each line read is sent as a prompt once the
previous one has ended: the answers' text goes to stdout, tool lines and
notices to stderr, as with tackle run.`,
		Example: `  tackle chat
  tackle chat --session s_0123abcd --permission-mode acceptEdits
  printf 'what does main.go do?\nand the tests?\n' | tackle chat`,
		Args: cobra.NoArgs,
		RunE: cmdutil.Run(func(cmd *cobra.Command, _ []string) error {
			if err := cmdutil.CheckMode(f.mode); err != nil {
				return err
			}
			return a.WithSession(cmd, &f.SessionFlags, func(ctx context.Context, c *client.Client, sid string) error {
				return runChat(ctx, a, c, sid, &f)
			})
		}),
	}
	f.SessionFlags.Register(cmd)
	cmd.Flags().StringVar(&f.model, "model", "", "the model of the prompts (an alias such as sonnet, or a full id; /model changes it)")
	cmd.Flags().StringVar(&f.mode, "permission-mode", "", "permission mode of the prompts' tool calls (/mode changes it)")
	return cmd
}

// chatHelp lists the slash commands (for /help and --help).
const chatHelp = `  /help           this list
  /model [NAME]   the model of the next prompts (an alias such as sonnet, or a full id;
                  "default" for the session's); without NAME, which one is used
  /mode [MODE]    the permission mode of the next prompts: default, acceptEdits, plan,
                  dontAsk or bypassPermissions ("session" for the session's own)
  /clear          start a new session in the directory and go on there
  /compact [TEXT] replace the conversation by the model's summary of it (TEXT: what
                  the summary should focus on)
  /exit           leave
  /NAME [ARGS]    invoke the skill NAME as a person does (tackle skills list shows them)
`

// chatExitWindow is how soon a second Ctrl-C must follow the first to leave.
const chatExitWindow = 2 * time.Second

// chatInput is one thing the person did: a line, Ctrl-C or the end of input.
type chatInput struct {
	kind int // inputLine, inputInterrupt or inputEOF
	text string
}

const (
	inputLine = iota
	inputInterrupt
	inputEOF
)

// chatUI is where a chat prints and where the person's input comes from.
// Its methods are called by the chat loop's goroutine only.
type chatUI interface {
	// text receives the answers' text; info tool lines, notices and
	// permission questions. They may be one writer.
	text() io.Writer
	info() io.Writer
	// inputs yields what the person typed.
	inputs() <-chan chatInput
	// ended is closed when the UI stopped by itself (nil: never).
	ended() <-chan struct{}
	// asking says whether the next line answers a permission question.
	asking(bool)
	// status is a line about the running prompt ("" for none).
	status(string)
	// close stops the UI; output after it is dropped. It returns the
	// UI's own failure, if any.
	close() error
}

// chat is one tackle chat. Its fields belong to the chat loop's goroutine.
type chat struct {
	a        *cmdutil.App
	c        *client.Client
	rpc      context.Context // for requests: not cancelled by an interrupt
	s        *client.Stream
	clientID string
	sid      string
	root     string // the root of sid's tree: where its sub-agents' requests wait
	cwd      string // where /clear makes its session
	model    string
	mode     string

	ui         chatUI
	tty        bool              // the terminal UI: echo typed lines, answer permissions inline
	text, info *trackedWriter    // the same writer on a terminal
	colour     bool              // diffs in colour
	pr         *ask.Prompter     // nil when stdin is not a terminal
	tree       *render.AgentTree // the session's sub-agents under their Agent calls
	live       render.LiveOutput // running calls' output, streamed as it comes
	askingNow  bool              // what ui.asking was last told
	statusNow  string            // what ui.status was last told
	sawDeltas  bool              // the message streaming now came as deltas
	running    string            // the session's running prompt ("" when idle)
	cancelled  string            // the running prompt this chat cancelled
	started    map[string]bool   // prompts seen starting (their ends are reported)
	mine       map[string]bool   // prompts this chat sent that have not ended
	lastCtrlC  time.Time         // the last Ctrl-C, for "twice leaves"
	job        *chatJob          // a request under way off the loop, if any
	jobDone    chan func()       // what to do with its answer, in the loop
	jobWait    sync.WaitGroup    // its goroutine
	done       chan struct{}     // closed when the loop has ended
}

// chatJob is a request that may take long (a skill's !`cmd` lines wait on
// permission answers, a compaction on the model): it runs off the loop, so
// the loop goes on showing events and asking questions.
type chatJob struct {
	what   string // "/name" for the person
	cancel context.CancelFunc
}

// trackedWriter remembers whether the last text written left a line open.
type trackedWriter struct {
	w   io.Writer
	mid bool
}

func (t *trackedWriter) Write(p []byte) (int, error) {
	if len(p) > 0 {
		t.mid = p[len(p)-1] != '\n'
	}
	return t.w.Write(p)
}

// runChat runs the conversation on session sid until the person leaves.
func runChat(ctx context.Context, a *cmdutil.App, c *client.Client, sid string, f *chatFlags) error {
	// The stream outlives an interrupt: a cancelled prompt's end is still to come.
	sctx, scancel := context.WithCancel(context.WithoutCancel(ctx))
	defer scancel()
	s, err := c.Attach(sctx, tacklev1.Role_ROLE_CONTROLLER)
	if err != nil {
		return err
	}
	defer s.Close()
	snap, err := s.Subscribe(sid, 0, true)
	if err != nil {
		return err
	}
	ch := &chat{
		a: a, c: c, rpc: context.WithoutCancel(ctx), s: s, clientID: s.Welcome().GetClientId(),
		sid: sid, root: ask.RootOf(snap, sid), cwd: snap.GetSession().GetCwd(), model: f.model, mode: f.mode, tree: render.NewAgentTree(),
		started: map[string]bool{}, mine: map[string]bool{}, jobDone: make(chan func()), done: make(chan struct{}),
	}
	if ch.cwd == "" {
		if ch.cwd, err = cmdutil.AbsDir(f.Cwd); err != nil {
			return err
		}
	}
	if cmdutil.IsTerminal(a.Stdin) && cmdutil.IsTerminal(a.Stdout) {
		ch.tty, ch.colour = true, a.Colour(a.Stdout)
		ch.ui = startChatTUI(a, newChatHistory(a, ch.cwd))
	} else {
		ch.colour = a.Colour(a.Stderr)
		ch.ui = newChatLines(a)
	}
	ch.text = &trackedWriter{w: ch.ui.text()}
	ch.info = ch.text
	if ch.ui.info() != ch.ui.text() {
		ch.info = &trackedWriter{w: ch.ui.info()}
	}
	ch.newPrompter()
	err = ch.loop(ctx, sctx, snap)
	ch.endLine()
	close(ch.done)
	if ch.job != nil {
		ch.job.cancel()
	}
	ch.jobWait.Wait()
	if uerr := ch.ui.close(); err == nil && uerr != nil {
		err = fmt.Errorf("running the terminal UI: %w", uerr)
	}
	return err
}

// newPrompter makes the permission prompter of the current session: on a
// terminal it asks through the UI, whose lines the loop hands it; with
// stdin a terminal but not stdout it asks on stderr (and the loop reads
// stdin); with stdin a pipe there is none, as with tackle run.
func (ch *chat) newPrompter() {
	ch.pr = nil
	if !cmdutil.IsTerminal(ch.a.Stdin) {
		return
	}
	pa := *ch.a
	pa.Stdin, pa.Stderr = nil, ch.info
	ch.pr = ask.NewPrompter(&pa, ch.s, ch.sid)
	ch.pr.Root = ch.root
	ch.pr.Lines = make(chan string) // never sent on: the loop reads the lines
	ch.pr.Before = func() {
		ch.endLine()
		ch.tree.Broke()
	}
}

// loop is the chat loop: input, the session's events and rendered skills,
// until the person leaves or the stream fails.
func (ch *chat) loop(ctx, sctx context.Context, snap *tacklev1.Snapshot) error {
	msgs := ch.s.Chan(sctx)
	ch.greet(snap)
	ch.refresh()
	interrupted := ctx.Done()
	leaveWhenIdle := false
	var grace <-chan time.Time
	for {
		if leaveWhenIdle && ch.idle() {
			return nil
		}
		// Without the terminal UI, the next line is read once the last
		// prompt ended (or when a permission question waits for it).
		var input <-chan chatInput
		if ch.tty || ch.idle() || ch.askingNow {
			input = ch.ui.inputs()
		}
		select {
		case <-interrupted:
			// On a terminal Ctrl-C is a key; a signal means leave. From
			// a pipe, an interrupt cancels the prompt and leaves after it.
			if ch.tty || ch.idle() {
				return nil
			}
			interrupted, leaveWhenIdle = nil, true
			grace = time.After(ask.CancelGrace)
			ch.say("tackle: interrupted; cancelling the prompt")
			ch.cancel()
		case <-grace:
			return fmt.Errorf("interrupted: the prompt did not end within %v after cancelling", ask.CancelGrace)
		case <-ch.ui.ended():
			return nil
		case in := <-input:
			leave, err := ch.input(in)
			if err != nil || leave {
				ch.leaving()
				return err
			}
		case then := <-ch.jobDone:
			then()
			ch.job.cancel()
			ch.job = nil
		case it, ok := <-msgs:
			if !ok {
				return fmt.Errorf("the daemon ended the stream: %w", client.ErrUnavailable)
			}
			if it.Err != nil {
				return fmt.Errorf("receiving events: %w", it.Err)
			}
			if err := ch.message(it.Msg); err != nil {
				return err
			}
		}
		ch.refresh()
	}
}

// idle reports whether nothing this chat sent is still under way.
func (ch *chat) idle() bool { return len(ch.mine) == 0 && ch.job == nil }

// greet prints where the chat is (on a terminal) and what the session is
// doing now: its running prompt with the text streamed so far, the queue,
// and the permission requests waiting for an answer.
func (ch *chat) greet(snap *tacklev1.Snapshot) {
	if ch.tty {
		ch.say("tackle chat: session %s in %s. /help lists the commands; Ctrl-D leaves.", ch.sid, ch.cwd)
	}
	if p := snap.GetPrompt(); p.GetId() != "" {
		ch.running = p.GetId()
		ch.started[p.GetId()] = true
		ch.say("» %s%s", indentMore(p.GetText()), ch.from(p))
		if t := snap.GetPartialText(); t != "" {
			ch.writeText(t)
			ch.sawDeltas = true
		}
	}
	for _, q := range snap.GetQueuedPrompts() {
		ch.say("queued: %s%s", indentMore(q.GetText()), ch.from(q))
	}
	for _, m := range snap.GetMcpAuth() {
		ch.say("tackle: %s", render.McpAuthLine(m))
	}
	ch.pending(snap)
}

// pending hands the snapshot's permission requests to the prompter.
func (ch *chat) pending(snap *tacklev1.Snapshot) {
	if ch.pr == nil {
		return
	}
	for _, p := range snap.GetPendingPermissions() {
		ch.pr.Requested(p)
	}
}

// refresh tells the UI whether a question waits and whether a prompt runs.
func (ch *chat) refresh() {
	asking := ch.pr != nil && len(ch.pr.Pending) > 0
	if asking != ch.askingNow {
		ch.askingNow = asking
		ch.ui.asking(asking)
	}
	status := ""
	switch {
	case asking:
		status = "a tool waits for your answer"
	case ch.job != nil:
		status = ch.job.what + "… (Ctrl-C cancels)"
	case ch.running != "":
		status = "working… (Ctrl-C cancels)"
	}
	if status != ch.statusNow {
		ch.statusNow = status
		ch.ui.status(status)
	}
}

// leaving says what goes on without the chat.
func (ch *chat) leaving() {
	if ch.running != "" && ch.running != ch.cancelled {
		ch.say("the prompt goes on in the daemon: tackle attach --session %s follows it", ch.sid)
	}
}

// input handles one line, Ctrl-C or end of input; leave ends the chat.
func (ch *chat) input(in chatInput) (leave bool, err error) {
	switch in.kind {
	case inputEOF:
		return true, nil
	case inputInterrupt:
		return ch.interrupt(), nil
	}
	line := in.text
	if ch.askingNow {
		if ch.tty {
			fmt.Fprintln(ch.info, line) // ends the question's line
		}
		return false, ch.pr.Answer(line)
	}
	text := strings.TrimSpace(line)
	if text == "" {
		return false, nil
	}
	ch.lastCtrlC = time.Time{}
	if ch.tty {
		ch.echo(text)
	}
	if strings.HasPrefix(text, "/") {
		return ch.command(text)
	}
	ch.send(line, ch.model)
	return false, nil
}

// echo prints the person's line above the input line.
func (ch *chat) echo(line string) {
	if ch.colour {
		ch.say("%s> %s%s", render.AnsiBold, indentMore(line), render.AnsiReset)
	} else {
		ch.say("> %s", indentMore(line))
	}
}

// interrupt is Ctrl-C: it cancels what runs; a second one soon after leaves.
func (ch *chat) interrupt() (leave bool) {
	now := time.Now()
	if !ch.lastCtrlC.IsZero() && now.Sub(ch.lastCtrlC) < chatExitWindow {
		return true
	}
	ch.lastCtrlC = now
	if ch.job != nil {
		ch.job.cancel()
		ch.say("cancelling %s (Ctrl-C again leaves)", ch.job.what)
		return false
	}
	if ch.cancel() {
		ch.say("cancelling the prompt (Ctrl-C again leaves)")
	} else {
		ch.say("nothing runs (Ctrl-C again or Ctrl-D leaves)")
	}
	return false
}

// cancel cancels the session's running prompt; false when none ran.
func (ch *chat) cancel() bool {
	cancelled, err := ch.c.CancelPrompt(ch.rpc, ch.sid, "")
	if err != nil {
		ch.say("tackle: cancelling the prompt: %v", err)
	}
	if cancelled {
		ch.cancelled = ch.running
	}
	return cancelled
}

// send sends a prompt to the session.
func (ch *chat) send(text, model string) {
	resp, err := ch.c.Prompt(ch.rpc, &tacklev1.PromptRequest{
		SessionId: ch.sid, Text: text, Model: model, PermissionMode: ch.mode, ClientId: ch.clientID,
	})
	if err != nil {
		ch.say("tackle: sending the prompt: %v", err)
		return
	}
	ch.mine[resp.GetPromptId()] = true
	if resp.GetQueued() {
		ch.say("queued: another prompt is running; yours reaches the model with its next request")
	}
}

// command runs a slash command.
func (ch *chat) command(line string) (leave bool, err error) {
	name, args, _ := strings.Cut(strings.TrimPrefix(line, "/"), " ")
	args = strings.TrimSpace(args)
	switch name {
	case "help", "?":
		ch.endLine()
		fmt.Fprint(ch.info, chatHelp)
	case "exit", "quit":
		return true, nil
	case "compact":
		sid := ch.sid
		ch.start("/compact", func(ctx context.Context) func() {
			_, err := ch.c.Compact(ctx, sid, args)
			return func() {
				if err != nil {
					ch.say("tackle: /compact: %v", jobErr(ctx, err))
				}
			}
		})
	case "clear":
		ch.newSession()
	case "model":
		switch args {
		case "":
		case "default":
			ch.model = ""
		default:
			ch.model = args
		}
		if ch.model == "" {
			ch.say("model: the session's (the model setting, else $ANTHROPIC_MODEL, else the default)")
		} else {
			ch.say("model: %s for the next prompts", ch.model)
		}
	case "mode":
		switch {
		case args == "":
		case args == "session":
			ch.mode = ""
		case slices.Contains(cmdutil.PermissionModes, args):
			ch.mode = args
		default:
			ch.say("tackle: /mode %s: use one of %s, or session", args, strings.Join(cmdutil.PermissionModes, ", "))
			return false, nil
		}
		if ch.mode == "" {
			ch.say("permission mode: the session's")
		} else {
			ch.say("permission mode: %s for the next prompts", ch.mode)
		}
	case "":
		ch.say("tackle: a command name follows the /: /help lists them")
	default:
		ch.renderSkill(name, args)
	}
	return false, nil
}

// newSession makes a new session in the directory (not its default one) and
// goes on there.
func (ch *chat) newSession() {
	resp, err := ch.c.CreateSession(ch.rpc, cmdutil.NewSessionRequest(ch.cwd, ch.a.Environ, false))
	if err != nil {
		ch.say("tackle: /clear: creating a session in %s: %v", ch.cwd, err)
		return
	}
	old, sid := ch.sid, resp.GetSession().GetId()
	// The stream's subscription moves; the new snapshot comes as a message.
	sub := &tacklev1.Subscribe{SessionId: sid, LiveOnly: true}
	if err := ch.s.Send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Subscribe{Subscribe: sub}}); err != nil {
		ch.say("tackle: /clear: subscribing to session %s: %v", sid, err)
		return
	}
	ch.sid, ch.root = sid, sid
	ch.tree = render.NewAgentTree()
	ch.running, ch.sawDeltas = "", false
	clear(ch.started)
	clear(ch.mine)
	ch.newPrompter()
	ch.say("new session %s: the conversation starts afresh (tackle chat --session %s goes back)", sid, old)
}

// start runs work off the loop; the func it returns runs in the loop
// with the answer. One job at a time.
func (ch *chat) start(what string, work func(ctx context.Context) (then func())) {
	if ch.job != nil {
		ch.say("tackle: %s: %s is still under way (Ctrl-C cancels it)", what, ch.job.what)
		return
	}
	ctx, cancel := context.WithCancel(ch.rpc)
	ch.job = &chatJob{what: what, cancel: cancel}
	ch.jobWait.Add(1)
	go func() {
		defer ch.jobWait.Done()
		then := work(ctx)
		select {
		case ch.jobDone <- then:
		case <-ch.done:
		}
	}()
}

// jobErr is a job's error as the person should read it.
func jobErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return errors.New("cancelled")
	}
	return err
}

// renderSkill invokes the skill name as a person does (RenderSkill, as
// tackle skill) and sends the rendered text as the prompt, in the skill's
// model if it names one.
func (ch *chat) renderSkill(name, args string) {
	req := &tacklev1.RenderSkillRequest{SessionId: ch.sid, Name: name, Args: args, PermissionMode: ch.mode}
	model := ch.model
	ch.start("/"+name, func(ctx context.Context) func() {
		resp, err := ch.c.Service().RenderSkill(ctx, req)
		return func() {
			if err != nil {
				ch.say("tackle: /%s: %v (/help lists the chat commands)", name, jobErr(ctx, client.Err(err)))
				return
			}
			if req.GetSessionId() != ch.sid {
				return // /clear came meanwhile
			}
			if m := resp.GetModel(); m != "" {
				model = m
			}
			ch.send(resp.GetText(), model)
		}
	})
}

// message handles one message of the stream.
func (ch *chat) message(m *tacklev1.ServerMessage) error {
	switch m := m.GetMsg().(type) {
	case *tacklev1.ServerMessage_Event:
		if m.Event.GetSessionId() == ch.sid {
			return ch.event(m.Event)
		}
	case *tacklev1.ServerMessage_Snapshot:
		// After /clear or a resubscription: the requests waiting now.
		if m.Snapshot.GetSession().GetId() == ch.sid {
			ch.pending(m.Snapshot)
		}
	case *tacklev1.ServerMessage_Error:
		se := client.NewStreamError(m.Error)
		if se.ResubscribeFromSeq == 0 {
			ch.say("tackle: daemon: %v", se)
			return nil
		}
		// We fell behind; the log has everything: go on from there.
		sub := &tacklev1.Subscribe{SessionId: ch.sid, FromSeq: se.ResubscribeFromSeq}
		if err := ch.s.Send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Subscribe{Subscribe: sub}}); err != nil {
			return fmt.Errorf("subscribing again: %w", err)
		}
	}
	return nil
}

// event renders one event of the session.
func (ch *chat) event(e *tacklev1.Event) error {
	if lines, ok := ch.tree.Lines(e); ok {
		for _, l := range lines {
			ch.line(l)
		}
		return nil
	}
	switch e.GetType() {
	case "prompt_queued":
		if p := e.GetPrompt(); !ch.isMine(p) {
			ch.say("queued: %s%s", indentMore(p.GetText()), ch.from(p))
		}
	case "prompt_started":
		p := e.GetPrompt()
		ch.running = p.GetId()
		ch.started[p.GetId()] = true
		ch.sawDeltas = false
		if !ch.isMine(p) {
			ch.say("» %s%s", indentMore(p.GetText()), ch.from(p))
		}
	case "assistant_delta":
		if d := e.GetDelta(); d.GetKind() == "text" {
			ch.writeText(d.GetText())
			ch.sawDeltas = true
		}
	case "assistant_message":
		if !ch.sawDeltas {
			var m struct {
				Content []struct{ Type, Text string } `json:"content"`
			}
			if json.Unmarshal([]byte(e.GetMessageJson()), &m) == nil {
				for _, b := range m.Content {
					if b.Type == "text" {
						ch.writeText(b.Text)
					}
				}
			}
		}
		ch.sawDeltas = false
	case "turn_started":
		ch.endLine()
		for _, c := range e.GetCalls() {
			ch.say("● %s %s", c.GetName(), render.MainArgument(c.GetInputJson()))
		}
	case "call_progress":
		if lines := ch.live.Add(e); len(lines) > 0 {
			ch.endLine()
			ch.say("%s", strings.Join(lines, "\n"))
		}
	case "call_result":
		r := e.GetResult()
		rest, streamed := ch.live.End(e.GetCallId())
		if len(rest) > 0 {
			ch.say("%s", strings.Join(rest, "\n"))
		}
		timing := render.ResultTiming(r, streamed)
		switch {
		case !r.GetIsError() && render.IsDiff(r.GetDisplay()):
			ch.endLine()
			ch.tree.Broke()
			render.WriteDiff(ch.info, r.GetDisplay(), ch.colour)
		case r.GetIsError():
			ch.say("  ✗ %s %s%s%s", r.GetName(), r.GetStatus(), timing, render.SummarySuffix(r))
		case timing != "":
			ch.say("  ✓ %s %s%s", r.GetName(), r.GetStatus(), timing)
		}
	case "permission_requested":
		if ch.pr != nil {
			ch.pr.Requested(e.GetPermission())
		} else {
			ch.say("tackle: %s waits for permission (answer with tackle permissions answer %s …)", ask.PermissionAsker(e.GetPermission()), e.GetPermission().GetRequestId())
		}
	case "permission_resolved":
		if ch.pr != nil {
			ch.pr.Resolved(e.GetResolution())
		}
	case "todos_updated":
		todos := e.GetSession().GetTodosJson()
		ch.say("todos (%s)", render.TodoCounts(todos))
		render.WriteTodos(ch.info, todos, "  ", ch.tty)
	case "model_retry":
		r := e.GetRetry()
		ch.say("tackle: retrying in %.1f s: %s", float64(r.GetWaitMs())/1000, r.GetReason())
	case "notice":
		ch.say("tackle: %s", strings.TrimRight(e.GetText(), "\n"))
	case "mcp_auth_required":
		ch.say("tackle: %s", render.McpAuthLine(e.GetMcpAuth()))
	case "compacted":
		ch.say("(the conversation was compacted: it goes on from the model's summary)")
	case "prompt_ended":
		ch.ended(e.GetPrompt())
	}
	return nil
}

// ended reports the end of a prompt: its error, or its stop reason when
// the model did not simply end its turn. Queued prompts that joined a
// running one end with it, unreported.
func (ch *chat) ended(p *tacklev1.PromptInfo) {
	id := p.GetId()
	delete(ch.mine, id)
	if ch.running == id {
		ch.running = ""
	}
	if !ch.started[id] {
		return
	}
	delete(ch.started, id)
	ch.endLine()
	switch {
	case p.GetError() != "":
		ch.say("tackle: %s", p.GetError())
	case p.GetStopReason() == "cancelled":
		ch.say("(cancelled)")
	case p.GetStopReason() != "end_turn":
		ch.say("(the prompt stopped: %s)", p.GetStopReason())
	}
}

// isMine reports whether this chat sent the prompt.
func (ch *chat) isMine(p *tacklev1.PromptInfo) bool {
	return ch.mine[p.GetId()] || p.GetClientId() != "" && p.GetClientId() == ch.clientID
}

// from names the client that sent a prompt of someone else.
func (ch *chat) from(p *tacklev1.PromptInfo) string {
	switch {
	case ch.isMine(p):
		return ""
	case p.GetClientId() != "":
		return "  (from client " + p.GetClientId() + ")"
	}
	return "  (from another client)"
}

// writeText writes the answer's text.
func (ch *chat) writeText(s string) {
	ch.tree.Broke()
	if ch.info != ch.text && ch.info.mid {
		io.WriteString(ch.info, "\n")
	}
	io.WriteString(ch.text, s)
}

// endLine ends an open line of the answer's text.
func (ch *chat) endLine() {
	if ch.text.mid {
		io.WriteString(ch.text, "\n")
	}
}

// say prints one line of information. On a terminal it ends the answer's
// open line first; on stderr it leaves stdout's text as it is (the answer
// goes on there after a notice).
func (ch *chat) say(format string, args ...any) {
	ch.tree.Broke()
	ch.line(fmt.Sprintf(format, args...))
}

// line prints one line as say does, but it is the sub-agent tree's.
func (ch *chat) line(s string) {
	if ch.info == ch.text {
		ch.endLine()
	}
	if ch.info.mid {
		io.WriteString(ch.info, "\n")
	}
	io.WriteString(ch.info, s+"\n")
}

// indentMore indents the lines after the first of a multi-line text.
func indentMore(s string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

// chatLines is the chat's UI without a terminal: text on stdout, the rest
// on stderr, lines read from stdin.
type chatLines struct {
	a    *cmdutil.App
	in   chan chatInput
	stop chan struct{}
}

func newChatLines(a *cmdutil.App) *chatLines {
	u := &chatLines{a: a, in: make(chan chatInput), stop: make(chan struct{})}
	// This goroutine reads stdin until its end or until the chat ends
	// (a read that blocks then ends with the process).
	go func() {
		sc := bufio.NewScanner(a.Stdin)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			select {
			case u.in <- chatInput{kind: inputLine, text: sc.Text()}:
			case <-u.stop:
				return
			}
		}
		select {
		case u.in <- chatInput{kind: inputEOF}:
		case <-u.stop:
		}
	}()
	return u
}

func (u *chatLines) text() io.Writer { return u.a.Stdout }

func (u *chatLines) info() io.Writer { return u.a.Stderr }

func (u *chatLines) inputs() <-chan chatInput { return u.in }

func (u *chatLines) ended() <-chan struct{} { return nil }

func (u *chatLines) asking(bool) {}

func (u *chatLines) status(string) {}

func (u *chatLines) close() error {
	close(u.stop)
	return nil
}
