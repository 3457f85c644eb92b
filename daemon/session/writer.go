package session

import (
	"context"
	"errors"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/store"
)

// errWriterClosed is the error of a write queued after the manager closed.
var errWriterClosed = errors.New("session manager is closed")

// maxBatch bounds the writes of one transaction.
const maxBatch = 512

// writer stores the event logs and read-state of every session of a manager
// in the background, many writes to one transaction, in the order they were
// queued. A SQLite commit costs tens of microseconds here; one per event
// would dominate a tool call, one per batch does not.
//
// Durability: Append waits for the commit of the events that must survive a
// crash (results, turn ends, permission requests and answers, session
// changes) before publishing them; since the queue is FIFO, every earlier
// write of any session is committed by then too. Only call states and
// progress may be published a moment before they are stored.
type writer struct {
	st  *store.Store
	log hclog.Logger

	mu      sync.Mutex // guards the fields below
	queue   []*write
	running bool
	closed  bool
	wake    chan struct{} // capacity 1: a queued write is waiting
	stopped chan struct{} // closed when the loop has exited
}

// write is one queued write; a zero store.Write is a flush marker.
type write struct {
	w    store.Write
	done chan struct{} // closed once stored (or failed)
	err  error
}

func newWriter(st *store.Store, log hclog.Logger) *writer {
	return &writer{st: st, log: log, wake: make(chan struct{}, 1), stopped: make(chan struct{})}
}

// durable reports whether an event of type t is stored before it is published.
func durable(t event.Type) bool {
	return t != event.CallState && t != event.CallProgress && t != event.TurnStarted
}

// enqueue queues w and returns its handle. The loop starts on first use.
func (wr *writer) enqueue(w store.Write) *write {
	it := &write{w: w, done: make(chan struct{})}
	wr.mu.Lock()
	if wr.closed {
		wr.mu.Unlock()
		it.err = errWriterClosed
		close(it.done)
		return it
	}
	wr.queue = append(wr.queue, it)
	if !wr.running {
		wr.running = true
		go wr.loop()
	}
	wr.mu.Unlock()
	select {
	case wr.wake <- struct{}{}:
	default:
	}
	return it
}

// wait blocks until it is stored and returns the error of its batch.
func (it *write) wait() error {
	<-it.done
	return it.err
}

// flush waits until everything queued before it is stored.
func (wr *writer) flush() error {
	return wr.enqueue(store.Write{}).wait()
}

// close stores what is queued, then stops the loop. Later writes fail.
func (wr *writer) close() {
	wr.mu.Lock()
	if wr.closed {
		wr.mu.Unlock()
		return
	}
	wr.closed = true
	running := wr.running
	wr.mu.Unlock()
	select {
	case wr.wake <- struct{}{}:
	default:
	}
	if running {
		<-wr.stopped
	}
}

func (wr *writer) loop() {
	defer close(wr.stopped)
	for {
		wr.mu.Lock()
		n := min(len(wr.queue), maxBatch)
		batch := wr.queue[:n:n]
		wr.queue = wr.queue[n:]
		closed := wr.closed
		wr.mu.Unlock()
		if n == 0 {
			if closed {
				return
			}
			<-wr.wake
			continue
		}
		ws := make([]store.Write, 0, n)
		for _, it := range batch {
			if it.w.Event != nil || it.w.SessionID != "" {
				ws = append(ws, it.w)
			}
		}
		var err error
		if len(ws) > 0 {
			if err = wr.st.WriteBatch(context.Background(), ws); err != nil {
				wr.log.Error("storing the session log", "writes", len(ws), "error", err)
			}
		}
		for _, it := range batch {
			it.err = err
			close(it.done)
		}
	}
}
