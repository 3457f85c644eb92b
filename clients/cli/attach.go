package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/tackle-agent/tackle/clients/client"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

func (a *app) attachCommand() *cobra.Command {
	var (
		sf       sessionFlags
		from     uint64
		asJSON   bool
		observer bool
		verbose  bool
	)
	cmd := &cobra.Command{
		Use:   "attach",
		Short: "Watch a session: its snapshot, then its events, until interrupted",
		Long: `Print a session's snapshot and then its events as they happen, until
interrupted (Ctrl-C ends it with status 0). Without --from only new events are
shown; --from SEQ first replays every stored event with seq >= SEQ. With
--json each line is one JSON object with "seq" and "type"; the first line is
the snapshot (type "snapshot").

For people each call is one line: its tool and main argument, then its
status, duration and a short result (the first line of its output, +ADDED
−DELETED for an edit, "denied by rule R"); on a terminal the line follows
the call's state and output in place. -v prints every event on a line of
its own instead.

attach answers permission requests of the session: in a terminal it asks
(y once, a always — then where to save the rule —, n deny, f deny with
feedback for the model); with --json it reads answers from stdin, one JSON
object a line:
  {"answer": "<request id>", "option": "allow_once|allow_always|deny", "scope": "session|project|user", "feedback": "..."}
Without a terminal and without --json, or with --observer, it only watches.

Sub-agents the session's Agent calls start show under their call: a line
  ⎿ TYPE "DESCRIPTION" STATUS · N tools · TOKENS tokens · DURATION
each time one starts, calls a tool or ends, and its tool calls indented
below it. Each sub-agent is a session of its own: attach --session AGENT_ID
shows its transcript. A sub-agent's permission request names the agent;
its answer goes to the session at the top of the tree, where the daemon
announced it (attach on a sub-agent's session sends it there too).`,
		Args: cobra.NoArgs,
		RunE: run(func(cmd *cobra.Command, _ []string) error {
			return a.withSession(cmd, &sf, func(ctx context.Context, c *client.Client, sid string) error {
				// On a terminal, attach answers permission requests too;
				// with --json it takes answers as JSON lines on stdin.
				interactive := !asJSON && !observer && isTerminal(a.stdin)
				jsonAnswers := asJSON && !observer
				role := tacklev1.Role_ROLE_OBSERVER
				if interactive || jsonAnswers {
					role = tacklev1.Role_ROLE_CONTROLLER
				}
				s, err := c.Attach(ctx, role)
				if err != nil {
					if ctx.Err() != nil {
						return nil
					}
					return err
				}
				defer s.Close()
				snap, err := s.Subscribe(sid, from, !cmd.Flags().Changed("from"))
				if err != nil {
					if ctx.Err() != nil {
						return nil
					}
					return err
				}
				// A sub-agent's requests wait in its root session: answers to
				// them go there, and its own snapshot does not list them.
				root := rootOf(snap, sid)
				if root != sid {
					a.addAgentPending(ctx, c, snap, sid, root)
				}
				tree := newAgentTree()
				var view *attachView // nil: every event as it is (-v, --json)
				if !asJSON && !verbose {
					view = newAttachView(a, tree)
				}
				var children []*tacklev1.Subagent
				if !asJSON {
					children = runningChildren(ctx, c, sid)
				}
				if err := a.printSnapshot(snap, asJSON, children, tree); err != nil {
					return err
				}
				// asked are the requests waiting, for routing JSON answers.
				asked := map[string]*tacklev1.PermissionRequest{}
				for _, p := range snap.GetPendingPermissions() {
					asked[p.GetRequestId()] = p
				}
				sessionFor := func(requestID string) string { return answerSession(asked[requestID], sid, root) }
				var answers <-chan string
				if jsonAnswers {
					stop := make(chan struct{})
					defer close(stop)
					answers = a.readJSONAnswers(stop)
				}
				var prompt *prompter
				if interactive {
					prompt = newPrompter(a, s, sid)
					prompt.root = root
					prompt.before = tree.broke
					for _, p := range snap.GetPendingPermissions() {
						prompt.requested(p)
					}
				}

				type item struct {
					m   *tacklev1.ServerMessage
					err error
				}
				msgs := make(chan item)
				recvDone, stopRecv := context.WithCancel(ctx)
				defer stopRecv()
				go func() {
					defer close(msgs)
					for m, err := range s.Messages() {
						select {
						case msgs <- item{m, err}:
						case <-recvDone.Done():
							return
						}
					}
				}()
				for {
					var it item
					var ok bool
					select {
					case <-ctx.Done():
						return nil
					case line := <-prompt.input():
						if err := prompt.answer(line); err != nil {
							return err
						}
						continue
					case line, ok := <-answers:
						if !ok {
							answers = nil // stdin ended: keep watching
							continue
						}
						if err := a.sendJSONAnswer(s, sessionFor, line); err != nil {
							return err
						}
						continue
					case it, ok = <-msgs:
					}
					if !ok {
						break
					}
					if it.err != nil {
						if ctx.Err() != nil {
							return nil
						}
						return fmt.Errorf("receiving events: %w", it.err)
					}
					switch m := it.m.GetMsg().(type) {
					case *tacklev1.ServerMessage_Event:
						if view != nil {
							err = view.event(m.Event)
						} else {
							err = a.printEvent(m.Event, asJSON, tree)
						}
						if err != nil {
							return err
						}
						switch m.Event.GetType() {
						case "permission_requested":
							asked[m.Event.GetPermission().GetRequestId()] = m.Event.GetPermission()
						case "permission_resolved":
							delete(asked, m.Event.GetResolution().GetRequestId())
						}
						if prompt != nil {
							switch m.Event.GetType() {
							case "permission_requested":
								prompt.requested(m.Event.GetPermission())
							case "permission_resolved":
								prompt.resolved(m.Event.GetResolution())
							}
						}
					case *tacklev1.ServerMessage_Error:
						se := client.NewStreamError(m.Error)
						if se.ResubscribeFromSeq == 0 {
							fmt.Fprintf(a.stderr, "tackle: daemon: %v\n", se)
							continue
						}
						// We fell behind; the log has everything: continue from there.
						sub := &tacklev1.Subscribe{SessionId: sid, FromSeq: se.ResubscribeFromSeq}
						if err := s.Send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Subscribe{Subscribe: sub}}); err != nil {
							return fmt.Errorf("subscribing again: %w", err)
						}
					}
					// A snapshot after resubscribing adds nothing the events do not tell.
				}
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("the daemon ended the stream: %w", client.ErrUnavailable)
			})
		}),
	}
	sf.register(cmd)
	cmd.Flags().Uint64Var(&from, "from", 0, "replay stored events from this sequence number first")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object a line; read answers as JSON lines on stdin")
	cmd.Flags().BoolVar(&observer, "observer", false, "only watch: answer no permission request")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "print every event (call states, progress, results) on a line of its own")
	return cmd
}

// addAgentPending adds to the snapshot of sub-agent session sid the
// requests of sid that wait in its root session.
func (a *app) addAgentPending(ctx context.Context, c *client.Client, snap *tacklev1.Snapshot, sid, root string) {
	reqs, err := c.ListPendingPermissions(ctx, root)
	if err != nil {
		fmt.Fprintf(a.stderr, "tackle: listing the requests waiting in the root session %s: %v\n", root, err)
		return
	}
	for _, p := range reqs {
		if p.GetAgent().GetId() == sid && !slices.ContainsFunc(snap.GetPendingPermissions(), func(q *tacklev1.PermissionRequest) bool {
			return q.GetRequestId() == p.GetRequestId()
		}) {
			snap.PendingPermissions = append(snap.PendingPermissions, p)
		}
	}
}

// runningChildren are the sub-agents of session sid that run now (none
// when the daemon cannot tell).
func runningChildren(ctx context.Context, c *client.Client, sid string) []*tacklev1.Subagent {
	all, err := c.ListSubagents(ctx, sid)
	if err != nil {
		return nil
	}
	var out []*tacklev1.Subagent
	for _, sa := range all {
		if sa.GetParentSessionId() == sid && (sa.GetStatus() == "running" || sa.GetStatus() == "blocked") {
			out = append(out, sa)
		}
	}
	return out
}

// printSnapshot prints what the session is doing: its running calls with
// the sub-agents running under them, and the requests waiting.
func (a *app) printSnapshot(s *tacklev1.Snapshot, asJSON bool, children []*tacklev1.Subagent, tree *agentTree) error {
	if asJSON {
		return a.printJSONLine(snapshotToJSON(s))
	}
	j := snapshotToJSON(s)
	fmt.Fprintf(a.stdout, "session %s  cwd %s  mode %s  events %d\n", j.Session.ID, j.Session.Cwd, modeName(j.Session.PermissionMode), j.Seq)
	writeSettingsProblems(a.stdout, s.GetSettingsProblems(), "  ")
	if l := j.Session.Agent; l != nil {
		fmt.Fprintf(a.stdout, "  agent    %s of session %s (call %s)\n", agentName(l.AgentType, l.Description), l.ParentSessionID, l.ParentCallID)
	}
	now := time.Now()
	printed := map[string]bool{}
	for _, r := range j.RunningCalls {
		fmt.Fprintf(a.stdout, "  running  %s %s (%s) %s\n", r.Tool, r.CallID, r.TurnID, r.State)
		for _, sa := range children {
			if sa.GetParentCallId() == r.CallID {
				fmt.Fprintf(a.stdout, "  %s%s · id %s\n", treeMark, subagentSummary(sa, now), sa.GetId())
				printed[sa.GetId()] = true
			}
		}
	}
	for _, sa := range children {
		// Background agents outlive their Agent call.
		if !printed[sa.GetId()] {
			fmt.Fprintf(a.stdout, "  agent    %s · id %s\n", subagentSummary(sa, now), sa.GetId())
		}
		tree.seen(sa)
	}
	for _, p := range j.PendingPermissions {
		by := ""
		if p.Agent != nil {
			by = " of agent " + agentName(p.Agent.Type, p.Agent.Description) + " (" + p.Agent.ID + ")"
		}
		fmt.Fprintf(a.stdout, "  waiting  %s %s%s for approval (request %s): %s\n", p.Tool, p.CallID, by, p.RequestID, p.Reason)
	}
	a.printTrust(s.GetTrust())
	for _, sh := range s.GetShells() {
		fmt.Fprintf(a.stdout, "  %s\n", shellLine(sh))
	}
	if todos := s.GetSession().GetTodosJson(); todos != "" && todos != "[]" {
		fmt.Fprintf(a.stdout, "  todos\n")
		writeTodos(a.stdout, todos, "    ", isTerminal(a.stdout))
	}
	return nil
}

// printEvent prints one event: a JSON line, or a line for people, with
// sub-agents drawn under their Agent calls by tree (nil: not drawn).
func (a *app) printEvent(e *tacklev1.Event, asJSON bool, tree *agentTree) error {
	if asJSON {
		return a.printJSONLine(eventToJSON(e))
	}
	w := a.stdout
	if tree != nil {
		if lines, ok := tree.lines(e); ok {
			for _, l := range lines {
				fmt.Fprintln(w, l)
			}
			return nil
		}
		defer tree.broke()
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
		if isDiff(r.GetDisplay()) {
			writeDiff(w, r.GetDisplay(), a.colour(w))
		} else if s := resultSummary(r); s != "" {
			fmt.Fprintf(w, "    %s\n", s)
		}
	case "permission_requested":
		p := e.GetPermission()
		if ag := p.GetAgent(); ag != nil {
			call += " of agent " + agentName(ag.GetType(), ag.GetDescription()) + " (" + ag.GetId() + ")"
		}
		fmt.Fprintf(w, "%s %s waits for approval (request %s): %s\n", head, call, p.GetRequestId(), reasonLine(p))
		writePreview(w, p, "    ", a.colour(w))
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
			line += ": " + firstLine(h.GetReason())
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
		fmt.Fprintf(w, "%s %s\n", head, todoCounts(todos))
		writeTodos(w, todos, "    ", isTerminal(w))
	case "shell_updated":
		fmt.Fprintf(w, "%s %s\n", head, shellLine(e.GetShell()))
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
