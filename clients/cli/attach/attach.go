// Package attach is `tackle attach`: it follows a session's events, for people
// (one line per call) or as JSON lines, and answers its permission prompts.
package attach

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"github.com/tackle-agent/tackle/clients/cli/internal/ask"
	"github.com/tackle-agent/tackle/clients/cli/internal/cmdutil"
	"github.com/tackle-agent/tackle/clients/cli/internal/render"
	"github.com/tackle-agent/tackle/clients/client"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// Command is `tackle attach`: a session's events as they happen, and answers to its prompts.
func Command(a *cmdutil.App) *cobra.Command {
	var (
		sf       cmdutil.SessionFlags
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
		RunE: cmdutil.Run(func(cmd *cobra.Command, _ []string) error {
			return a.WithSession(cmd, &sf, func(ctx context.Context, c *client.Client, sid string) error {
				// On a terminal, attach answers permission requests too;
				// with --json it takes answers as JSON lines on stdin.
				interactive := !asJSON && !observer && cmdutil.IsTerminal(a.Stdin)
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
				root := ask.RootOf(snap, sid)
				if root != sid {
					addAgentPending(ctx, a, c, snap, sid, root)
				}
				tree := render.NewAgentTree()
				var view *render.AttachView // nil: every event as it is (-v, --json)
				if !asJSON && !verbose {
					view = render.NewAttachView(a, tree)
				}
				var children []*tacklev1.Subagent
				if !asJSON {
					children = runningChildren(ctx, c, sid)
				}
				if err := printSnapshot(a, snap, asJSON, children, tree); err != nil {
					return err
				}
				// asked are the requests waiting, for routing JSON answers.
				asked := map[string]*tacklev1.PermissionRequest{}
				for _, p := range snap.GetPendingPermissions() {
					asked[p.GetRequestId()] = p
				}
				sessionFor := func(requestID string) string { return ask.AnswerSession(asked[requestID], sid, root) }
				var answers <-chan string
				if jsonAnswers {
					stop := make(chan struct{})
					defer close(stop)
					answers = ask.ReadJSONAnswers(a, stop)
				}
				var prompt *ask.Prompter
				if interactive {
					prompt = ask.NewPrompter(a, s, sid)
					prompt.Root = root
					prompt.Before = tree.Broke
					for _, p := range snap.GetPendingPermissions() {
						prompt.Requested(p)
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
					case line := <-prompt.Input():
						if err := prompt.Answer(line); err != nil {
							return err
						}
						continue
					case line, ok := <-answers:
						if !ok {
							answers = nil // stdin ended: keep watching
							continue
						}
						if err := ask.SendJSONAnswer(a, s, sessionFor, line); err != nil {
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
							err = view.Event(m.Event)
						} else {
							err = render.PrintEvent(a, m.Event, asJSON, tree)
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
								prompt.Requested(m.Event.GetPermission())
							case "permission_resolved":
								prompt.Resolved(m.Event.GetResolution())
							}
						}
					case *tacklev1.ServerMessage_Error:
						se := client.NewStreamError(m.Error)
						if se.ResubscribeFromSeq == 0 {
							fmt.Fprintf(a.Stderr, "tackle: daemon: %v\n", se)
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
	sf.Register(cmd)
	cmd.Flags().Uint64Var(&from, "from", 0, "replay stored events from this sequence number first")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object a line; read answers as JSON lines on stdin")
	cmd.Flags().BoolVar(&observer, "observer", false, "only watch: answer no permission request")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "print every event (call states, progress, results) on a line of its own")
	return cmd
}

// addAgentPending adds to the snapshot of sub-agent session sid the
// requests of sid that wait in its root session.
func addAgentPending(ctx context.Context, a *cmdutil.App, c *client.Client, snap *tacklev1.Snapshot, sid, root string) {
	reqs, err := c.ListPendingPermissions(ctx, root)
	if err != nil {
		fmt.Fprintf(a.Stderr, "tackle: listing the requests waiting in the root session %s: %v\n", root, err)
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
func printSnapshot(a *cmdutil.App, s *tacklev1.Snapshot, asJSON bool, children []*tacklev1.Subagent, tree *render.AgentTree) error {
	if asJSON {
		return a.PrintJSONLine(render.SnapshotToJSON(s))
	}
	j := render.SnapshotToJSON(s)
	fmt.Fprintf(a.Stdout, "session %s  cwd %s  mode %s  events %d\n", j.Session.ID, j.Session.Cwd, render.ModeName(j.Session.PermissionMode), j.Seq)
	render.WriteSettingsProblems(a.Stdout, s.GetSettingsProblems(), "  ")
	if l := j.Session.Agent; l != nil {
		fmt.Fprintf(a.Stdout, "  agent    %s of session %s (call %s)\n", render.AgentName(l.AgentType, l.Description), l.ParentSessionID, l.ParentCallID)
	}
	now := time.Now()
	printed := map[string]bool{}
	for _, r := range j.RunningCalls {
		fmt.Fprintf(a.Stdout, "  running  %s %s (%s) %s\n", r.Tool, r.CallID, r.TurnID, r.State)
		for _, sa := range children {
			if sa.GetParentCallId() == r.CallID {
				fmt.Fprintf(a.Stdout, "  %s%s · id %s\n", render.TreeMark, render.SubagentSummary(sa, now), sa.GetId())
				printed[sa.GetId()] = true
			}
		}
	}
	for _, sa := range children {
		// Background agents outlive their Agent call.
		if !printed[sa.GetId()] {
			fmt.Fprintf(a.Stdout, "  agent    %s · id %s\n", render.SubagentSummary(sa, now), sa.GetId())
		}
		tree.Seen(sa)
	}
	for _, p := range j.PendingPermissions {
		by := ""
		if p.Agent != nil {
			by = " of agent " + render.AgentName(p.Agent.Type, p.Agent.Description) + " (" + p.Agent.ID + ")"
		}
		fmt.Fprintf(a.Stdout, "  waiting  %s %s%s for approval (request %s): %s\n", p.Tool, p.CallID, by, p.RequestID, p.Reason)
	}
	render.PrintTrust(a, s.GetTrust())
	for _, sh := range s.GetShells() {
		fmt.Fprintf(a.Stdout, "  %s\n", render.ShellLine(sh))
	}
	if todos := s.GetSession().GetTodosJson(); todos != "" && todos != "[]" {
		fmt.Fprintf(a.Stdout, "  todos\n")
		render.WriteTodos(a.Stdout, todos, "    ", cmdutil.IsTerminal(a.Stdout))
	}
	return nil
}
