package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"sync"

	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
	"google.golang.org/grpc"
)

// Stream is one Attach stream: hello and welcome done, ready to subscribe.
// Send is safe for concurrent use; Recv, Subscribe and Messages must be used
// by one goroutine at a time.
type Stream struct {
	cancel  context.CancelFunc
	stream  grpc.BidiStreamingClient[tacklev1.ClientMessage, tacklev1.ServerMessage]
	welcome *tacklev1.Welcome
	// batched holds the events of an EventBatch that Recv has yet to
	// return, in order.
	batched []*tacklev1.Event

	// sendMu serialises Send (gRPC allows one sender at a time).
	sendMu sync.Mutex
	closed bool
}

// Attach opens an Attach stream, says Hello with role and waits for the
// Welcome. The stream lives until ctx ends or Close is called.
func (c *Client) Attach(ctx context.Context, role tacklev1.Role) (*Stream, error) {
	ctx, cancel := context.WithCancel(ctx)
	st, err := c.svc.Attach(ctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("attaching: %w", convertError(err))
	}
	s := &Stream{cancel: cancel, stream: st}
	hello := &tacklev1.Hello{ProtocolVersion: ProtocolVersion, ClientName: c.name, Role: role, EventBatches: true, AcceptedInBatches: true}
	if err := s.Send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Hello{Hello: hello}}); err != nil {
		s.Close()
		return nil, fmt.Errorf("saying hello: %w", err)
	}
	m, err := s.Recv()
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("waiting for welcome: %w", err)
	}
	if e := m.GetError(); e != nil {
		s.Close()
		return nil, fmt.Errorf("saying hello: %w", NewStreamError(e))
	}
	if s.welcome = m.GetWelcome(); s.welcome == nil {
		s.Close()
		return nil, fmt.Errorf("saying hello: the daemon answered %T, not a welcome", m.GetMsg())
	}
	return s, nil
}

// Welcome returns the daemon's answer to Hello.
func (s *Stream) Welcome() *tacklev1.Welcome { return s.welcome }

// Send sends one message. Errors are converted to the typed errors.
func (s *Stream) Send(m *tacklev1.ClientMessage) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if s.closed {
		return fmt.Errorf("sending: %w", io.ErrClosedPipe)
	}
	if err := s.stream.Send(m); err != nil {
		if errors.Is(err, io.EOF) {
			// The real error comes with the next Recv.
			return fmt.Errorf("sending: %w", ErrUnavailable)
		}
		return convertError(err)
	}
	return nil
}

// Recv receives one message. io.EOF means the daemon ended the stream.
// The events of an EventBatch come one by one, each as an event message,
// after the batch_accepted message it carries, if any.
func (s *Stream) Recv() (*tacklev1.ServerMessage, error) {
	for len(s.batched) == 0 {
		m, err := s.stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, io.EOF
			}
			return nil, convertError(err)
		}
		b := m.GetEvents()
		if b == nil {
			return m, nil
		}
		s.batched = b.GetEvents() // an empty one (the daemon sends none) is skipped
		if acc := b.GetAccepted(); acc != nil {
			return &tacklev1.ServerMessage{Msg: &tacklev1.ServerMessage_BatchAccepted{BatchAccepted: acc}}, nil
		}
	}
	e := s.batched[0]
	s.batched[0] = nil
	s.batched = s.batched[1:]
	return &tacklev1.ServerMessage{Msg: &tacklev1.ServerMessage_Event{Event: e}}, nil
}

// Subscribe attaches the stream to a session and returns its snapshot. With
// liveOnly the replay is skipped; otherwise every event with seq >= fromSeq
// follows the snapshot.
func (s *Stream) Subscribe(sessionID string, fromSeq uint64, liveOnly bool) (*tacklev1.Snapshot, error) {
	return s.SubscribeTypes(sessionID, fromSeq, liveOnly, nil)
}

// SubscribeTypes is Subscribe for the events of the given types only (none
// given: all); see Subscribe.event_types in tackle.proto.
func (s *Stream) SubscribeTypes(sessionID string, fromSeq uint64, liveOnly bool, types []string) (*tacklev1.Snapshot, error) {
	sub := &tacklev1.Subscribe{SessionId: sessionID, FromSeq: fromSeq, LiveOnly: liveOnly, EventTypes: types}
	if err := s.Send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Subscribe{Subscribe: sub}}); err != nil {
		return nil, fmt.Errorf("subscribing to session %s: %w", sessionID, err)
	}
	for {
		m, err := s.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = ErrUnavailable
			}
			return nil, fmt.Errorf("subscribing to session %s: %w", sessionID, err)
		}
		switch {
		case m.GetSnapshot() != nil:
			return m.GetSnapshot(), nil
		case m.GetError() != nil:
			e := m.GetError()
			return nil, fmt.Errorf("subscribing to session %s: %w", sessionID, NewStreamError(e))
		}
		// Anything else (a late event of an earlier subscription) is skipped.
	}
}

// RunBatch submits the calls of one model turn. The daemon answers with a
// BatchAccepted carrying ref and the turn id (or a StreamError).
func (s *Stream) RunBatch(rb *tacklev1.RunBatch) error {
	return s.Send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_RunBatch{RunBatch: rb}})
}

// Cancel cancels one call, or the whole turn when callID is empty.
func (s *Stream) Cancel(sessionID, turnID, callID string) error {
	c := &tacklev1.Cancel{SessionId: sessionID, TurnId: turnID, CallId: callID}
	return s.Send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Cancel{Cancel: c}})
}

// Answer answers a permission request.
func (s *Stream) Answer(a *tacklev1.PermissionAnswer) error {
	return s.Send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_PermissionAnswer{PermissionAnswer: a}})
}

// Messages yields every message the daemon sends until the stream ends. A
// clean end (the daemon closed the stream) ends the sequence without an
// error; any other failure is yielded once as the last element. Stopping
// the iteration early leaves the stream open.
func (s *Stream) Messages() iter.Seq2[*tacklev1.ServerMessage, error] {
	return func(yield func(*tacklev1.ServerMessage, error) bool) {
		for {
			m, err := s.Recv()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(m, nil) {
				return
			}
		}
	}
}

// Item is one message of Chan, or the error that ended the stream.
type Item struct {
	Msg *tacklev1.ServerMessage
	Err error
}

// Chan delivers Messages on a channel, for a select beside other inputs
// (stdin, an interrupt). The producer goroutine ends, closing the channel,
// when the stream ends or ctx is done.
func (s *Stream) Chan(ctx context.Context) <-chan Item {
	out := make(chan Item)
	go func() {
		defer close(out)
		for m, err := range s.Messages() {
			select {
			case out <- Item{m, err}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// Close ends the stream. It is idempotent.
func (s *Stream) Close() error {
	s.sendMu.Lock()
	if !s.closed {
		s.closed = true
		s.stream.CloseSend()
	}
	s.sendMu.Unlock()
	s.cancel()
	return nil
}
