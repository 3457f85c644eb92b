package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"sync"
	"time"
)

// decoder turns one provider's server-sent events into normalized events
// and accumulates the response. It is used by one goroutine.
type decoder interface {
	// event handles one server-sent event, appending what it yields to
	// out; done reports the stream's last event (message_stop, [DONE]).
	event(name, data []byte, out []Event) (_ []Event, done bool, err error)
	// truncated is the error of a body that ended before done.
	truncated() error
	// response is the accumulated response; blocks still open are
	// finalized (a tool input as incomplete). Idempotent.
	response() *Response
}

// drainWait bounds how long a finished stream waits for the body's end
// (the server ends it right after its last event), so that the connection
// goes back to the pool instead of being torn down.
const drainWait = 100 * time.Millisecond

// httpStream is a Stream over one HTTP response.
type httpStream struct {
	provider string
	parent   context.Context // the caller's
	cancel   context.CancelFunc
	body     io.ReadCloser
	sse      *sseReader
	dec      decoder
	reqID    string // the response's request-id
	// What open read before returning: the first event's yield.
	pending     []Event
	pendingDone bool
	pendingErr  error

	ranged    bool
	closeOnce sync.Once
	closed    chan struct{} // closed by Close
}

func newHTTPStream(provider string, parent context.Context, cancel context.CancelFunc, resp *http.Response, dec decoder) *httpStream {
	return &httpStream{
		provider: provider, parent: parent, cancel: cancel,
		body: resp.Body, sse: newSSEReader(resp.Body), dec: dec, reqID: requestID(resp.Header),
		closed: make(chan struct{}),
	}
}

// peek reads the first event (open retries a failure before it). A read
// error or a body without any event is returned; a decoding error is kept
// for Events.
func (s *httpStream) peek() error {
	name, data, err := s.sse.next()
	if err != nil {
		return err
	}
	s.pending, s.pendingDone, s.pendingErr = s.dec.event(name, data, nil)
	return nil
}

func (s *httpStream) Events() iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		if s.ranged {
			yield(Event{}, fmt.Errorf("%s: a stream's events can be read only once", s.provider))
			return
		}
		s.ranged = true
		out, done, err := s.pending, s.pendingDone, s.pendingErr
		s.pending = nil
		clean := false
		defer func() { s.finish(clean) }()
		for {
			for _, ev := range out {
				if !yield(ev, nil) {
					return
				}
			}
			if err != nil {
				yield(Event{}, err)
				return
			}
			if done {
				clean = true
				return
			}
			name, data, rerr := s.sse.next()
			if rerr != nil {
				yield(Event{}, s.readError(rerr))
				return
			}
			out, done, err = s.dec.event(name, data, out[:0])
		}
	}
}

// finish ends the stream after Events: after its last event the rest of
// the body is read (briefly), so the connection can be reused.
func (s *httpStream) finish(clean bool) {
	s.dec.response()
	if clean {
		t := time.AfterFunc(drainWait, s.cancel)
		_, _ = io.Copy(io.Discard, io.LimitReader(s.sse.r, 64<<10))
		t.Stop()
	}
	_ = s.Close()
}

// readError maps a failed body read to the error Events reports.
func (s *httpStream) readError(err error) error {
	select {
	case <-s.closed:
		return fmt.Errorf("%s: reading the stream: %w (the stream was closed)", s.provider, context.Canceled)
	default:
	}
	if cerr := s.parent.Err(); cerr != nil {
		return fmt.Errorf("%s: reading the stream: %w", s.provider, cerr)
	}
	switch {
	case err == io.EOF:
		return s.dec.truncated()
	case errors.Is(err, errEventTooLarge):
		return &Error{Provider: s.provider, Type: ErrInvalidStream, Message: err.Error(), Err: err}
	}
	return &Error{Provider: s.provider, Type: ErrConnection, Message: "reading the stream: " + err.Error(), Err: err}
}

func (s *httpStream) Response() *Response {
	r := s.dec.response()
	r.RequestID = s.reqID
	return r
}

func (s *httpStream) Close() error {
	s.closeOnce.Do(func() {
		close(s.closed)
		s.cancel()
		_ = s.body.Close()
	})
	return nil
}
