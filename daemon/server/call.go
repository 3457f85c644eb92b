package server

import (
	"encoding/json"
	"errors"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/tackle-agent/tackle/daemon/dispatch"
	"github.com/tackle-agent/tackle/daemon/event"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// callService implements CallService: one tool call, its events streamed
// to its result.
type callService struct {
	tacklev1.UnimplementedCallServiceServer
	s *Server
}

// Call implements CallService.
func (c *callService) Call(req *tacklev1.CallRequest, stream tacklev1.CallService_CallServer) error {
	s := c.s
	ctx := stream.Context()
	if req.GetName() == "" {
		return toStatus(invalidf("name is required: the tool to call (Read, Bash, mcp__server__tool)"))
	}
	input, err := callInput(req)
	if err != nil {
		return toStatus(err)
	}
	if err := checkMode(req.GetPermissionMode()); err != nil {
		return toStatus(err)
	}
	sess, err := s.explainSession(ctx, req.GetSessionId(), req.GetCwd())
	if err != nil {
		return toStatus(err)
	}
	name := req.GetClientName()
	if name == "" {
		name = "call"
	}
	clientID := s.newID(name + "-")
	s.clientsByID.put(clientID, peerClient(ctx, name))
	callID := req.GetId()
	if callID == "" {
		callID = s.newID("call-")
	}
	// A script's or a person's call (FromModel false): no model was shown
	// the session's deferred tools.
	turn := dispatch.Turn{
		ID:                s.newID("turn-"),
		ClientID:          clientID,
		Calls:             []event.CallInfo{{ID: callID, Name: req.GetName(), Input: input}},
		PermissionTimeout: time.Duration(req.GetPermissionTimeoutSeconds()) * time.Second,
	}
	if turn.PermissionTimeout == 0 && s.opts.AskTimeout != nil {
		askTimeout, root := s.opts.AskTimeout, sess.Root()
		turn.ResolvePermissionTimeout = func() time.Duration { return askTimeout(root) }
	}
	override := req.GetPermissionMode()
	turn.ResolveMode = func() string { return s.turnMode(sess, turn.ID, override) }

	// Subscribe before the turn starts: none of its events is missed.
	_, sub, err := sess.Subscribe(0, true, subscriptionBuffer)
	if err != nil {
		return toStatus(err)
	}
	defer func() { sub.Close() }()
	if !s.startTurn() {
		return toStatus(codedf(codes.Unavailable, "tackled is shutting down: call again once it is back"))
	}
	if s.log.IsDebug() { // see runBatch
		s.log.Debug("running call", "session", sess.ID(), "turn", turn.ID, "tool", req.GetName(), "client", clientID)
	}
	done := make(chan struct{})
	go func() {
		defer s.turns.Done()
		defer close(done)
		s.disp.RunTurn(s.turnCtx, sess, turn)
	}()
	cancelled := false
	var lastSeq uint64
	var replay []*event.Event // stored events to send before the live ones
	for {
		var e *event.Event
		if len(replay) > 0 {
			e, replay = replay[0], replay[1:]
		} else {
			select {
			case <-ctx.Done():
				// The caller went away: cancel the call; its result is
				// still recorded in the session.
				if !cancelled {
					cancelled = true
					s.disp.Cancel(sess.ID(), turn.ID, "")
					s.log.Info("call cancelled by its caller", "session", sess.ID(), "turn", turn.ID)
				}
				<-done
				return toStatus(ctx.Err())
			case ev, ok := <-sub.C():
				if !ok {
					// It fell behind: go on from the stored events.
					if sub.Err() == nil {
						return toStatus(errors.New("the session's event stream ended before the call's result"))
					}
					sub.Close()
					if replay, sub, err = sess.Subscribe(lastSeq+1, false, subscriptionBuffer); err != nil {
						return toStatus(err)
					}
					continue
				}
				e = ev
			}
		}
		if e.Seq <= lastSeq && e.Seq != 0 {
			continue // replayed twice
		}
		lastSeq = max(lastSeq, e.Seq)
		if e.TurnID != turn.ID {
			continue
		}
		if err := stream.Send(&tacklev1.CallResponse{Event: eventToProto(e)}); err != nil {
			return err
		}
		if e.Type == event.CallResult || e.Type == event.TurnEnded {
			return nil
		}
	}
}

// callInput is the input of a CallRequest: input (a Struct) or
// input_json, {} when neither is given.
func callInput(req *tacklev1.CallRequest) (json.RawMessage, error) {
	switch {
	case req.GetInput() != nil && req.GetInputJson() != "":
		return nil, invalidf("give input or input_json, not both")
	case req.GetInput() != nil:
		b, err := protojson.Marshal(req.GetInput())
		if err != nil {
			return nil, invalidf("input cannot be encoded as JSON: %v", err)
		}
		return b, nil
	case req.GetInputJson() != "":
		return inputFromProto(req.GetInputJson()), nil
	}
	return json.RawMessage(`{}`), nil
}
