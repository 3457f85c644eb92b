package permission

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	"github.com/tackle-agent/tackle/daemon/event"
)

// Answer decisions.
const (
	AllowOnce   = "allow_once"
	AllowAlways = "allow_always"
	DenyAnswer  = "deny"
)

// Answer is a person's reply to a permission request.
type Answer struct {
	// Decision is AllowOnce, AllowAlways or DenyAnswer.
	Decision string
	// Scope is where an allow_always rule goes (session, project, user).
	Scope string
	// Feedback is told to the model with a denial.
	Feedback string
	// UpdatedInput, if set, replaces the call's input (it is validated again).
	UpdatedInput json.RawMessage
	// ClientID is the client that answered.
	ClientID string
}

// Validate reports a decision the broker does not accept.
func (a Answer) Validate() error {
	switch a.Decision {
	case AllowOnce, AllowAlways, DenyAnswer:
		return nil
	}
	return fmt.Errorf("answering permission request: decision %q is not one of allow_once, allow_always, deny", a.Decision)
}

// Broker holds the permission requests that wait for an answer, per session.
// The first valid answer wins; later ones are refused. It is safe for
// concurrent use.
type Broker struct {
	mu      sync.Mutex // guards pending and seq
	pending map[string]map[string]*pendingReq
	seq     uint64
}

type pendingReq struct {
	req      event.PermissionRequest
	ch       chan Answer // capacity 1: Answer never blocks
	answered bool
	order    uint64
}

// NewBroker returns an empty broker.
func NewBroker() *Broker {
	return &Broker{pending: map[string]map[string]*pendingReq{}}
}

// NewRequestID returns a fresh random request id.
func NewRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "perm_" + hex.EncodeToString(b[:])
}

// Open registers a pending request of a session and returns the channel on
// which the first answer arrives (at most one value; it is never closed) and
// a function that removes the request. After remove returns, no answer can
// arrive any more, but one accepted just before is still in the channel:
// drain it without blocking to learn about it. An empty req.RequestID is
// filled with NewRequestID; a RequestID already pending is replaced.
func (b *Broker) Open(sessionID string, req event.PermissionRequest) (<-chan Answer, func()) {
	if req.RequestID == "" {
		req.RequestID = NewRequestID()
	}
	p := &pendingReq{req: req, ch: make(chan Answer, 1)}
	b.mu.Lock()
	b.seq++
	p.order = b.seq
	m := b.pending[sessionID]
	if m == nil {
		m = map[string]*pendingReq{}
		b.pending[sessionID] = m
	}
	m[req.RequestID] = p
	b.mu.Unlock()
	var once sync.Once
	return p.ch, func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			if m := b.pending[sessionID]; m != nil && m[req.RequestID] == p {
				delete(m, req.RequestID)
				if len(m) == 0 {
					delete(b.pending, sessionID)
				}
			}
		})
	}
}

// Answer delivers a to the pending request. It returns false when the
// request is unknown, already answered or removed, or a.Decision is invalid.
func (b *Broker) Answer(sessionID, requestID string, a Answer) bool {
	if a.Validate() != nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.pending[sessionID][requestID]
	if p == nil || p.answered {
		return false
	}
	p.answered = true
	p.ch <- a // capacity 1 and answered guards: never blocks
	return true
}

// Pending lists the unanswered requests of a session, oldest first.
func (b *Broker) Pending(sessionID string) []event.PermissionRequest {
	b.mu.Lock()
	ps := make([]*pendingReq, 0, len(b.pending[sessionID]))
	for _, p := range b.pending[sessionID] {
		if !p.answered {
			ps = append(ps, p)
		}
	}
	b.mu.Unlock()
	sort.Slice(ps, func(i, j int) bool { return ps[i].order < ps[j].order })
	out := make([]event.PermissionRequest, len(ps))
	for i, p := range ps {
		out[i] = p.req
	}
	return out
}
