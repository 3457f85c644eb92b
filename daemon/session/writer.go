package session

import (
	"context"
	"errors"
	"sync"
	"time"

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
// Durability: Append waits for the commit of what a person decided or changed
// (see durable) before publishing it; since the queue is FIFO, every earlier
// write of any session is committed by then too. Everything else (call
// states, progress, results, turn markers) is published at once and lingers
// up to 2 ms to share a commit: a commit costs about 100 µs here, which
// would otherwise double the cost of a small tool call. A SIGKILL therefore
// loses at most the last 2 ms of the log, never anything older, and a
// graceful stop loses nothing (Manager.Close flushes).
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
	w      store.Write
	urgent bool          // someone waits for it: commit without lingering
	done   chan struct{} // closed once stored (or failed)
	err    error
}

// linger is how long writes that nobody waits for may wait for company, so
// that a tool call's several events share one commit.
const linger = 2 * time.Millisecond

func newWriter(st *store.Store, log hclog.Logger) *writer {
	return &writer{st: st, log: log, wake: make(chan struct{}, 1), stopped: make(chan struct{})}
}

// durable reports whether an event of type t is stored before it is
// published: what a person decided or changed (permission requests and
// answers, session changes, todo lists, background shells starting and
// ending, notices), which happens at human speed, and the transcript of
// the query loop (prompts and whole messages), which the conversation is
// rebuilt from after a restart.
func durable(t event.Type) bool {
	switch t {
	case event.PermissionRequested, event.PermissionResolved, event.SessionUpdated, event.TodosUpdated, event.ShellUpdated, event.SubagentUpdated, event.Notice,
		event.PromptQueued, event.PromptStarted, event.AssistantMessage, event.ToolResults, event.PromptEnded, event.Compacted:
		return true
	}
	return false
}

// enqueue queues w and returns its handle; urgent writes are committed
// without lingering. The loop starts on first use.
func (wr *writer) enqueue(w store.Write, urgent bool) *write {
	it := &write{w: w, urgent: urgent, done: make(chan struct{})}
	wr.mu.Lock()
	if wr.closed {
		wr.mu.Unlock()
		it.err = errWriterClosed
		close(it.done)
		return it
	}
	wr.queue = append(wr.queue, it)
	// The loop needs waking only to start a linger period or to end one
	// early; other writes just join the queue (a goroutine switch per
	// event would cost more than the event).
	wake := len(wr.queue) == 1 || urgent
	if !wr.running {
		wr.running = true
		go wr.loop()
	}
	wr.mu.Unlock()
	if wake {
		select {
		case wr.wake <- struct{}{}:
		default:
		}
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
	return wr.enqueue(store.Write{}, true).wait()
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
	var bw *store.BatchWriter
	defer func() {
		if bw != nil {
			bw.Close()
		}
	}()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var deadline time.Time // when the oldest lingering write must be committed
	for {
		wr.mu.Lock()
		n := min(len(wr.queue), maxBatch)
		urgent := wr.closed || n == maxBatch
		for _, it := range wr.queue[:n] {
			urgent = urgent || it.urgent
		}
		if n > 0 && !urgent {
			if deadline.IsZero() {
				deadline = time.Now().Add(linger)
			}
			if wait := time.Until(deadline); wait > 0 {
				wr.mu.Unlock()
				timer.Reset(wait)
				select {
				case <-wr.wake:
				case <-timer.C:
				}
				continue
			}
		}
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
		deadline = time.Time{}
		ws := make([]store.Write, 0, n)
		for _, it := range batch {
			if it.w.Event != nil || it.w.Audit != nil || it.w.SessionID != "" {
				ws = append(ws, it.w)
			}
		}
		var err error
		if len(ws) > 0 {
			if bw == nil {
				bw, err = wr.st.NewBatchWriter(context.Background())
			}
			if err == nil {
				err = bw.Write(context.Background(), ws)
			}
			if err != nil {
				wr.log.Error("storing the session log", "writes", len(ws), "error", err)
				if bw != nil {
					bw.Close() // a fresh connection for the next batch
					bw = nil
				}
			}
		}
		for _, it := range batch {
			it.err = err
			close(it.done)
		}
	}
}
