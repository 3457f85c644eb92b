package event

import (
	"sync"
)

// Bus fans a session's events out to its subscribers.
//
// Delivery rules: events are delivered in sequence order. A Droppable event
// (progress) is skipped for a subscriber whose buffer is full, and counted in
// its Dropped. Any other event that does not fit cuts the subscriber off: its
// channel is closed with Err set to ErrSlow, and it must resubscribe from its
// last sequence number (the session replays from the database). Publish never
// blocks.
type Bus struct {
	mu   sync.Mutex // guards subs
	subs map[*Subscription]struct{}
}

// ErrSlow is the reason a subscription is cut off when its reader falls behind.
var ErrSlow = slowError{}

type slowError struct{}

func (slowError) Error() string {
	return "subscriber fell behind: resubscribe from the last sequence number received"
}

// Subscription is one reader of a Bus.
type Subscription struct {
	bus   *Bus
	ch    chan *Event
	types map[Type]bool // the only types delivered; nil: all

	mu      sync.Mutex // guards the fields below
	closed  bool
	err     error
	dropped int
}

// NewBus returns a bus with no subscribers.
func NewBus() *Bus { return &Bus{subs: map[*Subscription]struct{}{}} }

// Subscribe adds a subscriber with a buffer of size events (default 1024).
func (b *Bus) Subscribe(size int) *Subscription { return b.SubscribeTypes(size, nil) }

// SubscribeTypes is Subscribe for the events of the given types only (none
// given: all): the others are never queued for it, so a subscriber that
// handles a few types is not woken for the rest.
func (b *Bus) SubscribeTypes(size int, types []Type) *Subscription {
	if size <= 0 {
		size = 1024
	}
	s := &Subscription{bus: b, ch: make(chan *Event, size)}
	if len(types) > 0 {
		s.types = make(map[Type]bool, len(types))
		for _, t := range types {
			s.types[t] = true
		}
	}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s
}

// Subscribers counts the current subscribers (the clients watching).
func (b *Bus) Subscribers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}

// Publish delivers e to every subscriber, following the delivery rules above.
func (b *Bus) Publish(e *Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		if s.types != nil && !s.types[e.Type] {
			continue
		}
		select {
		case s.ch <- e:
		default:
			if e.Droppable() {
				s.mu.Lock()
				s.dropped++
				s.mu.Unlock()
				continue
			}
			delete(b.subs, s)
			s.closeWith(ErrSlow)
		}
	}
}

// Close cuts off every subscriber (with a nil Err).
func (b *Bus) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		delete(b.subs, s)
		s.closeWith(nil)
	}
}

// C returns the channel of events; it is closed when the subscription ends.
func (s *Subscription) C() <-chan *Event { return s.ch }

// Err tells why the channel was closed: nil after Close, ErrSlow when cut off.
func (s *Subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Dropped counts the progress events skipped for this subscriber.
func (s *Subscription) Dropped() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// Close ends the subscription. It is idempotent.
func (s *Subscription) Close() {
	s.bus.mu.Lock()
	delete(s.bus.subs, s)
	s.bus.mu.Unlock()
	s.closeWith(nil)
}

func (s *Subscription) closeWith(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	s.err = err
	close(s.ch)
}
