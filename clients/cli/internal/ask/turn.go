package ask

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/tackle-agent/tackle/clients/cli/internal/cmdutil"
	"github.com/tackle-agent/tackle/clients/cli/internal/render"
	"github.com/tackle-agent/tackle/clients/client"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// CancelGrace is how long an interrupted turn may take to deliver its
// cancelled results before tackle gives up waiting.
const CancelGrace = 10 * time.Second

// TurnFlags are the flags shared by call and batch.
type TurnFlags struct {
	cmdutil.SessionFlags
	Mode    string
	timeout uint32
	AsJSON  bool
}

// Register adds the session flags, --permission-mode, --permission-timeout
// and --json to cmd.
func (f *TurnFlags) Register(cmd *cobra.Command) {
	f.SessionFlags.Register(cmd)
	cmd.Flags().StringVar(&f.Mode, "permission-mode", "", "permission mode for this call: default, acceptEdits, plan, dontAsk, bypassPermissions")
	cmd.Flags().Uint32Var(&f.timeout, "permission-timeout", 0, "seconds a permission request waits for an answer before it is denied (0: the daemon's default)")
	cmd.Flags().BoolVar(&f.AsJSON, "json", false, "print results as JSON")
}

// NewID returns prefix followed by 16 random hex digits.
func NewID(prefix string) string {
	var b [8]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// turn is one RunBatch in flight and what tackle knows about it.
type turn struct {
	a         *cmdutil.App
	s         *client.Stream
	sessionID string
	calls     []*tacklev1.ToolCall
	turnID    string
	results   map[string]*tacklev1.ToolResult
	ended     bool
	spin      *render.Spinner
	label     string    // what runs: the tool and its main argument
	started   time.Time // when the turn was sent

	// prompt asks permission requests on stdin (a terminal); nil when
	// stdin is not one or carried the input.
	prompt *Prompter
}

// RunTurn runs calls as one model turn in the session and returns their
// results in call order. stdinFree tells whether stdin may be used to
// answer permission requests. Cancelling ctx cancels the turn; the
// cancelled results are still collected.
func RunTurn(ctx context.Context, a *cmdutil.App, c *client.Client, sessionID string, calls []*tacklev1.ToolCall, f *TurnFlags, stdinFree bool) ([]*tacklev1.ToolResult, error) {
	// The stream outlives an interrupt so the cancelled results arrive.
	sctx, scancel := context.WithCancel(context.WithoutCancel(ctx))
	defer scancel()
	s, err := c.Attach(sctx, tacklev1.Role_ROLE_CONTROLLER)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if _, err := s.Subscribe(sessionID, 0, true); err != nil {
		return nil, err
	}
	ref := NewID("ref-")
	if err := s.RunBatch(&tacklev1.RunBatch{
		SessionId: sessionID, Calls: calls, Ref: ref,
		PermissionMode: f.Mode, PermissionTimeoutSeconds: f.timeout,
		Direct: true, // a person's calls: no deferred tool to load first
	}); err != nil {
		return nil, fmt.Errorf("running the batch: %w", err)
	}

	msgs := s.Chan(sctx)

	t := &turn{
		a: a, s: s, sessionID: sessionID, calls: calls, results: map[string]*tacklev1.ToolResult{},
	}
	if in, out, closeTTY, ok := PromptIO(a, stdinFree); ok {
		defer closeTTY()
		t.prompt = NewPrompter(a, s, sessionID)
		t.prompt.In, t.prompt.Out = in, out
		t.prompt.Before = func() { t.spin.Stop() }
		t.prompt.after = func() {
			t.spin = render.StartSpinner(a.Stderr, t.label)
			t.spin.SetStart(t.started)
		}
	}
	t.label = strings.TrimSpace(calls[0].GetName() + " " + render.MainArgument(calls[0].GetInputJson()))
	if len(calls) > 1 {
		t.label = fmt.Sprintf("%d calls", len(calls))
	}
	t.started = time.Now()
	t.spin = render.StartSpinner(a.Stderr, t.label)
	defer func() { t.spin.Stop() }()

	interrupted := ctx.Done()
	cancelWanted := false
	var grace <-chan time.Time
	var early []*tacklev1.Event // events that came before BatchAccepted
	for !t.done() {
		select {
		case <-interrupted:
			interrupted = nil
			cancelWanted = true
			grace = time.After(CancelGrace)
			t.spin.Stop()
			fmt.Fprintln(a.Stderr, "tackle: interrupted; cancelling the calls")
			if t.turnID != "" {
				if err := s.Cancel(sessionID, t.turnID, ""); err != nil {
					return nil, fmt.Errorf("cancelling the turn: %w", err)
				}
			}
		case <-grace:
			return nil, fmt.Errorf("interrupted: the calls did not end within %v after cancelling", CancelGrace)
		case line := <-t.prompt.Input():
			if err := t.prompt.Answer(line); err != nil {
				return nil, err
			}
		case it, ok := <-msgs:
			if !ok {
				return nil, fmt.Errorf("the daemon ended the stream before the calls ended: %w", client.ErrUnavailable)
			}
			if it.Err != nil {
				return nil, fmt.Errorf("receiving events: %w", it.Err)
			}
			switch m := it.Msg.GetMsg().(type) {
			case *tacklev1.ServerMessage_BatchAccepted:
				if m.BatchAccepted.GetRef() != ref || t.turnID != "" {
					continue
				}
				t.turnID = m.BatchAccepted.GetTurnId()
				if cancelWanted {
					if err := s.Cancel(sessionID, t.turnID, ""); err != nil {
						return nil, fmt.Errorf("cancelling the turn: %w", err)
					}
				}
				for _, e := range early {
					t.event(e)
				}
				early = nil
			case *tacklev1.ServerMessage_Error:
				se := client.NewStreamError(m.Error)
				switch {
				case t.turnID == "" && (se.Ref == ref || se.Ref == ""):
					return nil, fmt.Errorf("running the batch: %w", se)
				case se.ResubscribeFromSeq != 0:
					// We fell behind: pick up where the log continues.
					sub := &tacklev1.Subscribe{SessionId: sessionID, FromSeq: se.ResubscribeFromSeq}
					if err := s.Send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Subscribe{Subscribe: sub}}); err != nil {
						return nil, fmt.Errorf("subscribing again: %w", err)
					}
				default:
					t.notice("daemon: %v", se)
				}
			case *tacklev1.ServerMessage_Event:
				if t.turnID == "" {
					early = append(early, m.Event)
					continue
				}
				t.event(m.Event)
			}
		}
	}
	t.spin.Stop()
	out := make([]*tacklev1.ToolResult, len(calls))
	for i, call := range calls {
		r := t.results[call.GetId()]
		if r == nil {
			r = &tacklev1.ToolResult{
				Id: call.GetId(), Name: call.GetName(), Status: "failed", IsError: true,
				Content: []*tacklev1.ContentBlock{{Type: "text", Text: "tackle received no result for this call before the turn ended"}},
			}
		}
		out[i] = r
	}
	return out, nil
}

// done reports whether every call has its result (or the turn ended).
func (t *turn) done() bool { return t.ended || len(t.results) >= len(t.calls) }

// notice prints a line on stderr, clearing the spinner first.
func (t *turn) notice(format string, args ...any) {
	t.spin.Stop()
	fmt.Fprintf(t.a.Stderr, "tackle: "+format+"\n", args...)
}

// event handles one event of the session.
func (t *turn) event(e *tacklev1.Event) {
	if e.GetTurnId() != t.turnID {
		return
	}
	switch e.GetType() {
	case "call_result":
		r := e.GetResult()
		id := r.GetId()
		if id == "" {
			id = e.GetCallId()
		}
		if r != nil {
			t.results[id] = r
		}
	case "turn_ended":
		t.ended = true
	case "call_state":
		label := t.label
		if len(t.calls) > 1 {
			label = e.GetTool()
		}
		t.spin.SetLabel(label + " · " + strings.ReplaceAll(e.GetState(), "_", " "))
	case "call_progress":
		t.spin.Output(e.GetText())
	case "permission_requested":
		t.permissionRequested(e.GetPermission())
	case "permission_resolved":
		t.permissionResolved(e.GetResolution())
	}
}

func (t *turn) permissionRequested(p *tacklev1.PermissionRequest) {
	if p == nil {
		return
	}
	if t.prompt == nil {
		deadline := ""
		if d := p.GetDeadline(); d != nil {
			deadline = " until " + d.AsTime().Local().Format("15:04:05")
		}
		t.notice("%s waits for approval%s (request %s: %s); another client may answer it, else it is denied",
			p.GetTool(), deadline, p.GetRequestId(), render.ReasonLine(p))
		render.WritePreview(t.a.Stderr, p, "    ", t.a.Colour(t.a.Stderr))
		return
	}
	t.prompt.Requested(p)
}

func (t *turn) permissionResolved(r *tacklev1.PermissionResolved) {
	if t.prompt != nil {
		t.prompt.Resolved(r)
	}
}
