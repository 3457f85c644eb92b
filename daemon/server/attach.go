package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tackle-agent/tackle/daemon/dispatch"
	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/session"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// subscriptionBuffer is the Bus buffer of one attached stream. A stream that
// falls this far behind is cut off and told to resubscribe.
const subscriptionBuffer = 1024

// maxEventMessage is the size over which an event is bounded before it is
// sent (session.Session.Bounded), well below a client's 4 MB message limit.
const maxEventMessage = 1 << 20

// replayPage is about how much of the stored log a replay reads at once
// (session.Session.StoredPage): a long replay holds one page in memory, not
// the whole log, and no lock while it reads.
const replayPage = 4 << 20

// attachment is the state of one Attach stream. Only the stream's handler
// goroutine touches it, so it needs no lock.
type attachment struct {
	srv      *Server
	stream   tacklev1.TackleService_AttachServer
	log      hclog.Logger
	clientID string
	role     tacklev1.Role

	sess     *session.Session    // the subscribed session, nil if none
	sub      *event.Subscription // its live events
	lastSent uint64              // seq of the last event sent from sess
	// types are the only event types sent (Subscribe.event_types; none:
	// all).
	types []event.Type
	// batches: the client takes EventBatch messages (Hello.event_batches);
	// acceptedInBatch: and a BatchAccepted inside one
	// (Hello.accepted_in_batches).
	batches, acceptedInBatch bool
	ready                    []*event.Event // sendLive's, reused

	// accepted is a BatchAccepted not sent yet: it goes out right before
	// the next message, which is usually the batch's first events (within
	// microseconds: the turn starts at once), so that the two share one
	// write and one wake-up of the client — for a client that takes it
	// so (acceptedInBatch), inside their EventBatch, one message fewer to
	// frame and decode; at the latest acceptedDelay after the batch was
	// accepted (acceptedTimer), for a client that takes none of the turn's
	// early events.
	accepted      *tacklev1.ServerMessage
	acceptedTimer *time.Timer
}

// acceptedDelay bounds how long a BatchAccepted waits for the message it
// is sent with.
const acceptedDelay = 5 * time.Millisecond

// Attach implements TackleService: see tackle.proto. Messages are handled in
// order, on the handler's goroutine, which is also the only one that sends.
// A bad message gets a StreamError and the stream goes on.
func (s *Server) Attach(stream tacklev1.TackleService_AttachServer) error {
	first, err := stream.Recv()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	hello := first.GetHello()
	if hello == nil {
		return status.Error(codes.InvalidArgument, "the first message of an Attach stream must be Hello")
	}
	if v := hello.GetProtocolVersion(); v != 0 && v != ProtocolVersion {
		return status.Errorf(codes.FailedPrecondition, "protocol version %d is not supported: this daemon speaks %d; upgrade the client or restart the daemon", v, ProtocolVersion)
	}
	role := hello.GetRole()
	if role == tacklev1.Role_ROLE_UNSPECIFIED {
		role = tacklev1.Role_ROLE_CONTROLLER
	}
	name := hello.GetClientName()
	if name == "" {
		name = "client"
	}
	a := &attachment{
		srv:      s,
		stream:   stream,
		clientID: s.newID(name + "-"),
		role:     role,
		batches:  hello.GetEventBatches(),
		// A client of an earlier build ignores the field it does not know.
		acceptedInBatch: hello.GetEventBatches() && hello.GetAcceptedInBatches(),
	}
	a.log = s.log.With("client", a.clientID)
	s.clientsByID.put(a.clientID, peerClient(stream.Context(), name))
	s.clients.Add(1)
	defer s.clients.Add(-1)
	defer a.unsubscribe()
	a.log.Debug("client attached", "role", role.String())

	if err := stream.Send(&tacklev1.ServerMessage{Msg: &tacklev1.ServerMessage_Welcome{Welcome: &tacklev1.Welcome{
		ProtocolVersion: ProtocolVersion,
		DaemonVersion:   s.opts.Version,
		BuildId:         s.opts.BuildID,
		ClientId:        a.clientID,
		Role:            role,
	}}}); err != nil {
		return err
	}

	// The reader goroutine hands messages over; it ends when Recv fails,
	// which happens at the latest when this handler returns.
	msgs := make(chan *tacklev1.ClientMessage)
	recvErr := make(chan error, 1)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			m, err := stream.Recv()
			if err != nil {
				recvErr <- err
				return
			}
			select {
			case msgs <- m:
			case <-done:
				return
			}
		}
	}()

	ctx := stream.Context()
	a.acceptedTimer = time.NewTimer(time.Hour)
	a.acceptedTimer.Stop()
	defer a.acceptedTimer.Stop()
	for {
		var live <-chan *event.Event
		if a.sub != nil {
			live = a.sub.C()
		}
		var acceptedDue <-chan time.Time
		if a.accepted != nil {
			acceptedDue = a.acceptedTimer.C
		}
		select {
		case <-acceptedDue:
			if err := a.send(nil); err != nil {
				return err
			}
		case m := <-msgs:
			if err := a.handle(m); err != nil {
				return err
			}
		case err := <-recvErr:
			if !errors.Is(err, io.EOF) {
				return err
			}
			// The client closed its side: keep streaming events to a
			// subscribed client until it goes away.
			a.log.Debug("client closed its send side")
			if a.sub == nil {
				return a.send(nil) // a BatchAccepted that waits
			}
			recvErr = nil
		case e, ok := <-live:
			if !ok {
				if err := a.subscriptionEnded(); err != nil {
					return err
				}
				continue
			}
			if err := a.sendLive(e); err != nil {
				return err
			}
		case <-s.closing:
			a.drain()
			return status.Error(codes.Unavailable, "tackled is shutting down")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// handle handles one client message. An error it returns ends the stream;
// a problem with the message itself is reported with a StreamError.
func (a *attachment) handle(m *tacklev1.ClientMessage) error {
	var ref string
	var err error
	switch msg := m.GetMsg().(type) {
	case *tacklev1.ClientMessage_Hello:
		err = invalidf("hello was already received")
	case *tacklev1.ClientMessage_Subscribe:
		err = a.subscribe(msg.Subscribe)
	case *tacklev1.ClientMessage_RunBatch:
		ref = msg.RunBatch.GetRef()
		err = a.runBatch(msg.RunBatch)
	case *tacklev1.ClientMessage_Cancel:
		err = a.cancel(msg.Cancel)
	case *tacklev1.ClientMessage_PermissionAnswer:
		err = a.answer(msg.PermissionAnswer)
	case *tacklev1.ClientMessage_Prompt:
		ref = msg.Prompt.GetRef()
		err = a.prompt(msg.Prompt)
	case *tacklev1.ClientMessage_EndTurn:
		a.log.Debug("end of turn", "session", msg.EndTurn.GetSessionId())
		if f := a.srv.opts.EndTurn; f != nil && msg.EndTurn.GetSessionId() != "" {
			f(msg.EndTurn.GetSessionId())
		}
	default:
		err = invalidf("empty or unknown client message")
	}
	if err == nil {
		return nil
	}
	var sendErr *sendError
	if errors.As(err, &sendErr) {
		return sendErr.err
	}
	a.log.Debug("client message refused", "error", err)
	return a.send(streamError(err, ref))
}

// sendError marks a failure to send on the stream, which ends it.
type sendError struct{ err error }

func (e *sendError) Error() string { return e.err.Error() }

// send sends m (nil: nothing), after a BatchAccepted that waits (see
// attachment.accepted), or with it when m is an EventBatch.
func (a *attachment) send(m *tacklev1.ServerMessage) error {
	if p := a.accepted; p != nil {
		a.accepted = nil
		a.acceptedTimer.Stop()
		if b := m.GetEvents(); b != nil && a.acceptedInBatch {
			b.Accepted = p.GetBatchAccepted()
		} else if err := a.stream.Send(p); err != nil {
			return &sendError{err: err}
		}
	}
	if m == nil {
		return nil
	}
	if err := a.stream.Send(m); err != nil {
		return &sendError{err: err}
	}
	return nil
}

func (a *attachment) sendEvent(e *event.Event) error {
	p, _ := a.outgoing(e)
	if p == nil {
		return nil
	}
	return a.send(&tacklev1.ServerMessage{Msg: &tacklev1.ServerMessage_Event{Event: p}})
}

// outgoing is the message of e for this client and its approximate size,
// or nil when e is not sent: sent already (in the replay) or of a type the
// client did not ask for.
func (a *attachment) outgoing(e *event.Event) (*tacklev1.Event, int) {
	if e.Seq <= a.lastSent {
		return nil, 0 // already sent in the replay
	}
	a.lastSent = e.Seq
	if len(a.types) > 0 && !slices.Contains(a.types, e.Type) {
		return nil, 0 // not asked for (a replayed event: the live ones are not queued)
	}
	n := session.EventSize(e)
	if a.sess != nil && n > maxEventMessage {
		// Stored before events were bounded: a client takes messages of
		// at most 4 MB, so the large fields go to files.
		e = a.sess.Bounded(e)
		n = session.EventSize(e)
	}
	return eventToProto(e), n
}

// maxBatchEvents bounds the events of one EventBatch (with its size,
// maxEventMessage).
const maxBatchEvents = 128

// sendEvents sends es in order: to a client that takes batches as
// EventBatch messages of at most maxBatchEvents events and about
// maxEventMessage bytes (an event that is larger goes alone), else one
// message each.
func (a *attachment) sendEvents(es []*event.Event) error {
	if !a.batches {
		for _, e := range es {
			if err := a.sendEvent(e); err != nil {
				return err
			}
		}
		return nil
	}
	var batch []*tacklev1.Event
	size := 0
	flush := func() error {
		var m *tacklev1.ServerMessage
		switch {
		case len(batch) == 0:
			return nil
		case len(batch) == 1 && (a.accepted == nil || !a.acceptedInBatch):
			m = &tacklev1.ServerMessage{Msg: &tacklev1.ServerMessage_Event{Event: batch[0]}}
		default: // a BatchAccepted waiting goes in the batch (send)
			m = &tacklev1.ServerMessage{Msg: &tacklev1.ServerMessage_Events{Events: &tacklev1.EventBatch{Events: batch}}}
		}
		batch, size = nil, 0
		return a.send(m)
	}
	for _, e := range es {
		p, n := a.outgoing(e)
		if p == nil {
			continue
		}
		if len(batch) > 0 && (size+n > maxEventMessage || len(batch) == maxBatchEvents) {
			if err := flush(); err != nil {
				return err
			}
		}
		batch, size = append(batch, p), size+n
	}
	return flush()
}

// sendLive sends e, a live event, with the events queued behind it: the
// steps of a call follow each other within microseconds, and a client that
// takes batches gets them in one message. It does not wait for more.
func (a *attachment) sendLive(e *event.Event) error {
	if !a.batches {
		return a.sendEvent(e)
	}
	es := append(a.ready[:0], e)
	defer func() { clear(es); a.ready = es[:0] }()
queued:
	for len(es) < maxBatchEvents {
		select {
		case e, ok := <-a.sub.C():
			if !ok {
				break queued // ended: the caller's next receive sees it too
			}
			es = append(es, e)
		default:
			break queued
		}
	}
	return a.sendEvents(es)
}

// subscribe attaches the stream to a session, replacing any earlier
// subscription: snapshot, replay, then live events.
//
// A replay longer than a page is read a page at a time: the snapshot is
// sent first, then the pages, then the subscription starts after the last
// page and replays the rest (what was stored or queued meanwhile). A
// shorter one is read as the first page, the subscription starting after
// it, and sent after the snapshot.
func (a *attachment) subscribe(req *tacklev1.Subscribe) error {
	ctx := a.stream.Context()
	types, err := eventTypes(req.GetEventTypes())
	if err != nil {
		return err
	}
	sess, err := a.srv.session(ctx, req.GetSessionId())
	if err != nil {
		return err
	}
	a.unsubscribe()
	a.types = types
	from := max(req.GetFromSeq(), 1)
	a.sess, a.lastSent = sess, from-1
	var page []*event.Event
	if !req.GetLiveOnly() {
		var more bool
		if page, more, err = sess.StoredPage(ctx, from, replayPage); err != nil {
			a.sess = nil
			return fmt.Errorf("replaying session %s: %w", sess.ID(), err)
		}
		if more {
			return a.subscribePaged(sess, page)
		}
		if len(page) > 0 {
			from = page[len(page)-1].Seq + 1
		}
	}
	replay, sub, err := sess.SubscribeTypes(from, req.GetLiveOnly(), subscriptionBuffer, a.types)
	if err != nil {
		a.sess = nil
		return fmt.Errorf("subscribing to session %s: %w", sess.ID(), err)
	}
	a.sub = sub
	if err := a.send(a.snapshot(sess)); err != nil {
		return err
	}
	for _, l := range [][]*event.Event{page, replay} {
		if err := a.sendEvents(l); err != nil {
			return err
		}
	}
	a.log.Debug("subscribed", "session", sess.ID(), "from", req.GetFromSeq(), "replayed", len(page)+len(replay))
	return nil
}

// eventTypes checks the event types a Subscribe asks for.
func eventTypes(names []string) ([]event.Type, error) {
	var out []event.Type
	for _, n := range names {
		t := event.Type(n)
		if !slices.Contains(event.Types, t) {
			known := make([]string, len(event.Types))
			for i, k := range event.Types {
				known[i] = string(k)
			}
			return nil, invalidf("unknown event type %q in event_types: the types are %s", n, strings.Join(known, ", "))
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

// subscribePaged is subscribe for a replay longer than a page, page the
// first: the snapshot, the pages, then the subscription after them.
func (a *attachment) subscribePaged(sess *session.Session, page []*event.Event) error {
	ctx := a.stream.Context()
	if err := a.send(a.snapshot(sess)); err != nil {
		return err
	}
	n := 0
	for {
		if err := a.sendEvents(page); err != nil {
			return err
		}
		n += len(page)
		var more bool
		var err error
		if page, more, err = sess.StoredPage(ctx, a.lastSent+1, replayPage); err != nil {
			a.sess = nil
			return fmt.Errorf("replaying session %s: %w", sess.ID(), err)
		}
		if !more {
			break
		}
	}
	// The last page, read again under the subscription's lock with what
	// is queued.
	replay, sub, err := sess.SubscribeTypes(a.lastSent+1, false, subscriptionBuffer, a.types)
	if err != nil {
		a.sess = nil
		return fmt.Errorf("subscribing to session %s: %w", sess.ID(), err)
	}
	a.sub = sub
	if err := a.sendEvents(replay); err != nil {
		return err
	}
	a.log.Debug("subscribed", "session", sess.ID(), "replayed", n+len(replay), "paged", true)
	return nil
}

// snapshot is the Snapshot of sess sent when a stream subscribes to it.
func (a *attachment) snapshot(sess *session.Session) *tacklev1.ServerMessage {
	snap := &tacklev1.Snapshot{
		Session:            a.srv.sessionProto(sess.Info()),
		PendingPermissions: pendingToProto(a.srv.pending(a.stream.Context(), sess.ID())),
		RunningCalls:       runningToProto(a.srv.disp.Running(sess.ID())),
		Shells:             shellsToProto(a.srv.shellsOf(sess.ID())),
		Trust:              a.srv.trustInfo(sess.Root()),
		SettingsProblems:   a.srv.settingsProblems(sess.Root()),
	}
	if a.srv.opts.MCPAuth != nil {
		for _, f := range a.srv.opts.MCPAuth.PendingAuth(sess) {
			snap.McpAuth = append(snap.McpAuth, mcpAuthToProto(&f))
		}
	}
	if a.srv.opts.Agent != nil {
		running, partial, queued := a.srv.opts.Agent.Snapshot(sess.ID())
		snap.Prompt, snap.PartialText = promptToProto(running), partial
		for _, q := range queued {
			snap.QueuedPrompts = append(snap.QueuedPrompts, promptToProto(q))
		}
	}
	return &tacklev1.ServerMessage{Msg: &tacklev1.ServerMessage_Snapshot{Snapshot: snap}}
}

func (a *attachment) unsubscribe() {
	if a.sub != nil {
		a.sub.Close()
	}
	a.sess, a.sub = nil, nil
}

// subscriptionEnded tells the client why its subscription ended.
func (a *attachment) subscriptionEnded() error {
	id, err := a.sess.ID(), a.sub.Err()
	next := a.lastSent + 1
	a.unsubscribe()
	se := &tacklev1.StreamError{Code: codes.Aborted.String(), ResubscribeFromSeq: next}
	if errors.Is(err, event.ErrSlow) {
		se.Code = codes.ResourceExhausted.String()
		se.Message = fmt.Sprintf("the client fell behind on session %s: resubscribe from %d", id, next)
		a.log.Warn("cut off a slow subscriber", "session", id, "resubscribe_from", next)
	} else {
		se.Message = fmt.Sprintf("the subscription to session %s ended (the session was closed or deleted)", id)
	}
	return a.send(&tacklev1.ServerMessage{Msg: &tacklev1.ServerMessage_Error{Error: se}})
}

// drain sends the events already queued for the stream, without waiting.
func (a *attachment) drain() {
	if a.sub == nil {
		return
	}
	for {
		select {
		case e, ok := <-a.sub.C():
			if !ok {
				return
			}
			if a.sendLive(e) != nil {
				return
			}
		default:
			return
		}
	}
}

func (a *attachment) requireController(what string) error {
	if a.role != tacklev1.Role_ROLE_CONTROLLER {
		return codedf(codes.PermissionDenied, "an observer may not %s: attach as a controller", what)
	}
	return nil
}

// runBatch starts one model turn. Its result events go to the session log;
// the turn runs with the daemon's lifetime, not the stream's, so a client
// that disconnects loses nothing.
func (a *attachment) runBatch(rb *tacklev1.RunBatch) error {
	if err := a.requireController("run tool calls"); err != nil {
		return err
	}
	if rb.GetSessionId() == "" {
		return invalidf("run_batch needs a session_id")
	}
	if a.sess == nil || a.sess.ID() != rb.GetSessionId() {
		return codedf(codes.FailedPrecondition, "subscribe to session %s before running calls on it", rb.GetSessionId())
	}
	if len(rb.GetCalls()) == 0 {
		return invalidf("run_batch has no calls")
	}
	if err := checkMode(rb.GetPermissionMode()); err != nil {
		return err
	}
	calls := make([]event.CallInfo, 0, len(rb.GetCalls()))
	seen := map[string]bool{}
	for i, c := range rb.GetCalls() {
		if c.GetId() == "" {
			return invalidf("call %d has no id", i)
		}
		if seen[c.GetId()] {
			return invalidf("call id %q appears twice in the batch", c.GetId())
		}
		seen[c.GetId()] = true
		calls = append(calls, event.CallInfo{ID: c.GetId(), Name: c.GetName(), Input: inputFromProto(c.GetInputJson())})
	}
	turn := dispatch.Turn{
		ID:                a.srv.newID("turn-"),
		ClientID:          a.clientID,
		Calls:             calls,
		PermissionMode:    rb.GetPermissionMode(),
		PermissionTimeout: time.Duration(rb.GetPermissionTimeoutSeconds()) * time.Second,
		FromModel:         !rb.GetDirect(),
	}
	if turn.PermissionTimeout == 0 && a.srv.opts.AskTimeout != nil {
		// permissions.askTimeoutSeconds of the settings; the batch's own
		// wins. Read only when a prompt opens.
		askTimeout, root := a.srv.opts.AskTimeout, a.sess.Root()
		turn.ResolvePermissionTimeout = func() time.Duration { return askTimeout(root) }
	}
	if !a.srv.startTurn() {
		return codedf(codes.Unavailable, "tackled is shutting down: run the batch again once it is back")
	}
	// BatchAccepted goes out with the turn's first events (see
	// attachment.accepted); one still waiting is sent first.
	if err := a.send(nil); err != nil {
		// The stream is broken: the turn was not announced, do not run it.
		a.srv.turns.Done()
		return err
	}
	a.accepted = &tacklev1.ServerMessage{Msg: &tacklev1.ServerMessage_BatchAccepted{BatchAccepted: &tacklev1.BatchAccepted{
		Ref: rb.GetRef(), TurnId: turn.ID,
	}}}
	a.acceptedTimer.Reset(acceptedDelay)
	sess, log := a.sess, a.log
	// hclog builds a line's arguments before it looks at the level: on
	// every batch's path, ask first.
	if log.IsDebug() {
		log.Debug("running batch", "session", sess.ID(), "turn", turn.ID, "calls", len(calls))
	}
	a.srv.turnWorkers.Go(func() {
		defer a.srv.turns.Done()
		// The settings are read at every turn, so an edited settings file
		// applies to the next batch without a restart.
		// The mode is resolved (and settings problems reported) only when a
		// permission decision needs it: a read-only call inside the working
		// directories reads no settings.
		override := turn.PermissionMode
		turn.PermissionMode = ""
		turn.ResolveMode = func() string { return a.srv.turnMode(sess, turn.ID, override) }
		results := a.srv.disp.RunTurn(a.srv.turnCtx, sess, turn)
		if log.IsDebug() {
			log.Debug("batch done", "session", sess.ID(), "turn", turn.ID, "results", len(results))
		}
	})
	return nil
}

// prompt sends a prompt to the subscribed session's agent and answers
// with PromptAccepted.
func (a *attachment) prompt(req *tacklev1.PromptRequest) error {
	if err := a.requireController("send prompts"); err != nil {
		return err
	}
	if a.srv.opts.Agent == nil {
		return codedf(codes.Unimplemented, "this daemon runs no agent")
	}
	if a.sess == nil || req.GetSessionId() != "" && a.sess.ID() != req.GetSessionId() {
		return codedf(codes.FailedPrecondition, "subscribe to the session before sending it prompts")
	}
	pr, err := promptFromProto(req)
	if err != nil {
		return err
	}
	pr.ClientID = a.clientID
	acc, err := a.srv.opts.Agent.Prompt(a.sess, pr)
	if err != nil {
		return err
	}
	return a.send(&tacklev1.ServerMessage{Msg: &tacklev1.ServerMessage_PromptAccepted{PromptAccepted: &tacklev1.PromptAccepted{
		Ref: req.GetRef(), PromptId: acc.PromptID, Queued: acc.Queued,
	}}})
}

// inputFromProto turns input_json into the call's input. Empty means {};
// text that is not JSON is passed on as a JSON string, so the pipeline
// rejects it as a schema failure the model can read, and the event log
// stays valid JSON.
func inputFromProto(s string) json.RawMessage {
	if s == "" {
		return json.RawMessage(`{}`)
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

func (a *attachment) cancel(c *tacklev1.Cancel) error {
	if err := a.requireController("cancel calls"); err != nil {
		return err
	}
	if c.GetSessionId() == "" || c.GetTurnId() == "" {
		return invalidf("cancel needs session_id and turn_id")
	}
	if !a.srv.disp.Cancel(c.GetSessionId(), c.GetTurnId(), c.GetCallId()) {
		if c.GetCallId() != "" {
			return codedf(codes.NotFound, "no running call %s in turn %s of session %s", c.GetCallId(), c.GetTurnId(), c.GetSessionId())
		}
		return codedf(codes.NotFound, "no running turn %s in session %s", c.GetTurnId(), c.GetSessionId())
	}
	a.log.Info("cancel requested", "session", c.GetSessionId(), "turn", c.GetTurnId(), "call", c.GetCallId())
	return nil
}

func (a *attachment) answer(pa *tacklev1.PermissionAnswer) error {
	if err := a.requireController("answer permission requests"); err != nil {
		return err
	}
	ans, err := answerFromProto(pa, a.clientID)
	if err != nil {
		return err
	}
	if !a.srv.answerPermission(a.stream.Context(), pa.GetSessionId(), pa.GetRequestId(), ans) {
		return codedf(codes.NotFound, "no pending permission request %s in session %s: it was already answered, timed out or never existed", pa.GetRequestId(), pa.GetSessionId())
	}
	a.log.Info("permission answered", "session", pa.GetSessionId(), "request", pa.GetRequestId(), "decision", ans.Decision)
	return nil
}
