package session

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/store"
)

// errWriterClosed is the error of a write queued after the manager closed.
var errWriterClosed = errors.New("session manager is closed")

// ErrLogUnwritable is wrapped by the errors of writes the session log could
// not take: its queue is full because the state database has not been
// writable for a while, or a write failed after every retry.
var ErrLogUnwritable = errors.New("the session log could not be written")

// maxBatch bounds the writes of one transaction.
const maxBatch = 512

// Retry and queue bounds of the writer (see writer).
const (
	// retryLocked is how long a batch is retried while the database is
	// locked by another process (each attempt also waits the busy timeout).
	retryLocked = 30 * time.Second
	// retryFailing is how long a batch is retried on any other error (disk
	// full, I/O error).
	retryFailing = 3 * time.Second
	// retryBroken is how long a batch is retried once a write failed for
	// good and none has succeeded since: the log fails fast until the
	// database takes a write again.
	retryBroken = 250 * time.Millisecond
	// firstBackoff and maxBackoff bound the wait between attempts.
	firstBackoff = 20 * time.Millisecond
	maxBackoff   = time.Second
	// maxQueued and maxQueuedBytes bound the writes waiting in memory
	// while the database takes none (in number and in about their size
	// as JSON): past either, writes are not queued (see enqueueWrite).
	maxQueued      = 100_000
	maxQueuedBytes = 64 << 20
)

// writer stores the event logs and read-state of every session of a manager
// in the background, many writes to one transaction, in the order they were
// queued. A SQLite commit costs tens of microseconds here; one per event
// would dominate a tool call, one per batch does not.
//
// Durability: Append waits for the commit of what a person decided or changed
// (see durable) before publishing it; since the queue is FIFO, every earlier
// write of any session is committed by then too. Everything else (call
// states, progress, results, turn markers, permission prompts) is published
// at once and lingers up to 5 ms to share a commit: a commit of one small
// call's writes costs ~250 µs of CPU here, ~190 of it the commit's own (the
// WAL frames of the pages it touches; store.BenchmarkBatchWrite), which
// would otherwise be half the cost of a small tool call. At one small call every ~0.5 ms, 5 ms makes ~8 calls a
// commit where 2 ms made ~4 (about 8 % of a Read's CPU in alternating runs).
// A SIGKILL therefore loses at most the last 5 ms of the log, never anything
// older, and a graceful stop loses nothing (Manager.Close flushes); readers
// of the store (the audit log, a replay) flush first or read the queue.
//
// Failures: a commit that fails (the database locked by another process
// past the busy timeout, a full disk, an I/O error) is retried with backoff
// (retryLocked, retryFailing) while the batch stays at the head of the
// queue and later writes queue behind it, up to maxQueued writes or
// maxQueuedBytes. A batch that still fails is dropped: its waiters get the
// error, the error is logged, and onLost is told of the published events it
// held (the session turns them into a notice, so no gap in seq reaches a
// client without one, and names the calls whose results were shown before
// the loss was known; a call still running learns of it from
// Session.CallLogFailure). Until a commit succeeds again the writer is
// broken and retries only retryBroken. Past the queue's bounds a write
// is not queued: an event published first is dropped (the session tells
// of its loss), any other write is refused with ErrLogUnwritable. The
// first commit that succeeds after any loss calls onRecovered.
type writer struct {
	st  *store.Store
	log hclog.Logger
	// onLost, if set, is called on a goroutine of its own with the
	// published writes of a batch that could not be stored.
	onLost func(lost []*write, err error)
	// onRecovered, if set, is called on a goroutine of its own when a
	// commit succeeds after writes were lost.
	onRecovered func()
	// Bounds; tests lower them.
	retryLocked, retryFailing, retryBroken time.Duration
	maxQueued, maxQueuedBytes              int

	mu       sync.Mutex // guards the fields below
	room     *sync.Cond // on mu: the queue has room, or the database fails
	queue    []*write
	inflight []*write // the batch being committed (or retried)
	running  bool
	closed   bool
	wake     chan struct{} // capacity 1: a queued write is waiting
	stopped  chan struct{} // closed when the loop has exited
	// broken is the error of the last batch dropped, nil once a commit
	// succeeds again.
	broken error
	// queuedBytes is about the size of the writes in queue and inflight;
	// overflowing is set while writes are dropped for the queue's bounds,
	// lossPending from any loss until a commit succeeds again.
	queuedBytes              int
	overflowing, lossPending bool
	failing                  error     // the last error of the batch being retried
	inflightSince            time.Time // when its first attempt began
}

// write is one queued write; a zero store.Write is a flush marker.
type write struct {
	w      store.Write
	urgent bool          // someone waits for it: commit without lingering
	done   chan struct{} // closed once stored (or failed)
	err    error
	size   int // about its size as JSON (see approxSize)
	// published: the event was published before it was stored, so its
	// loss must be told; notice: it is itself the notice of a loss;
	// rejected: it was never queued and must not be published (err says
	// why); dropped: it is published but was not queued, the queue being
	// full (err says so).
	published, notice, rejected, dropped bool
	// shown: its call's result was shown without telling of a loss, so
	// the notice of its loss names the call (see Session.CallLogFailure).
	// Guarded by its session's appendMu.
	shown bool
}

// linger is how long writes that nobody waits for may wait for company, so
// that a tool call's several events share one commit.
const linger = 5 * time.Millisecond

func newWriter(st *store.Store, log hclog.Logger) *writer {
	wr := &writer{
		st: st, log: log, wake: make(chan struct{}, 1), stopped: make(chan struct{}),
		retryLocked: retryLocked, retryFailing: retryFailing, retryBroken: retryBroken,
		maxQueued: maxQueued, maxQueuedBytes: maxQueuedBytes,
	}
	wr.room = sync.NewCond(&wr.mu)
	return wr
}

// durable reports whether an event of type t is stored before it is
// published: what a person decided or changed (session changes, todo
// lists, background shells starting and ending, notices), which happens
// at human speed, and the transcript of the query loop (prompts and whole
// messages), which the conversation is rebuilt from after a restart.
//
// Permission requests and their resolutions are not: a prompt is
// published at once and stored right after (urgent, see publishFirst), so
// that it reaches the clients even while the database is locked — the
// pending request is in the broker's memory anyway, and a late client
// finds it in its snapshot.
func durable(t event.Type) bool {
	switch t {
	case event.SessionUpdated, event.TodosUpdated, event.ShellUpdated, event.SubagentUpdated, event.Notice,
		event.PromptQueued, event.PromptStarted, event.AssistantMessage, event.ToolResults, event.PromptEnded, event.Compacted:
		return true
	}
	return false
}

// publishFirst reports whether an event of type t is published before it
// is stored but committed without lingering: the permission prompt path.
func publishFirst(t event.Type) bool {
	return t == event.PermissionRequested || t == event.PermissionResolved
}

// enqueue queues w and returns its handle; urgent writes are committed
// without lingering. published says the caller publishes the event before
// it is stored. The loop starts on first use.
func (wr *writer) enqueue(w store.Write, urgent bool) *write {
	return wr.enqueueWrite(&write{w: w, urgent: urgent, published: w.Event != nil && !urgent})
}

// enqueueWrite queues it and returns it. While the queue holds maxQueued
// writes or maxQueuedBytes, it is not queued but done at once with an
// error wrapping ErrLogUnwritable: dropped if it is published anyway,
// else rejected.
func (wr *writer) enqueueWrite(it *write) *write {
	it.done = make(chan struct{})
	it.size = 256
	if it.w.Event != nil {
		it.size = approxSize(it.w.Event)
	}
	wr.mu.Lock()
	if wr.closed {
		wr.mu.Unlock()
		it.rejected = true
		it.err = errWriterClosed
		close(it.done)
		return it
	}
	// A full queue while the database takes writes (only slower than
	// they come) holds the caller back until there is room.
	for wr.fullLocked(it) && !wr.closed && wr.failing == nil && wr.broken == nil {
		wr.room.Wait()
	}
	if wr.closed {
		wr.mu.Unlock()
		it.rejected = true
		it.err = errWriterClosed
		close(it.done)
		return it
	}
	if wr.fullLocked(it) {
		n := len(wr.queue) + len(wr.inflight)
		it.err = wr.overflowLocked(n)
		first := !wr.overflowing
		wr.overflowing = true
		wr.mu.Unlock()
		if first {
			wr.log.Error("the session log's queue is full: writes are not stored", "writes", n, "error", it.err)
		}
		it.dropped, it.rejected = it.published, !it.published
		close(it.done)
		return it
	}
	wr.queuedBytes += it.size
	wr.queue = append(wr.queue, it)
	// The loop needs waking only to start a linger period or to end one
	// early; other writes just join the queue (a goroutine switch per
	// event would cost more than the event).
	wake := len(wr.queue) == 1 || it.urgent
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

// isMarker reports whether w is a flush marker, which writes nothing.
func isMarker(w store.Write) bool {
	return w.Event == nil && w.Audit == nil && w.SessionID == ""
}

// wait blocks until it is stored and returns the error of its batch.
func (it *write) wait() error {
	<-it.done
	return it.err
}

// finished reports whether it is stored or failed (its err is then set).
func (it *write) finished() bool {
	select {
	case <-it.done:
		return true
	default:
		return false
	}
}

// flush waits until everything queued before it is stored.
func (wr *writer) flush() error {
	return wr.enqueue(store.Write{}, true).wait()
}

// fullLocked reports whether the queue has no room for it: it holds
// maxQueued writes, or it would pass maxQueuedBytes (a write larger than
// that fits an empty queue). A flush marker always fits. wr.mu is held.
func (wr *writer) fullLocked(it *write) bool {
	n := len(wr.queue) + len(wr.inflight)
	return !isMarker(it.w) && n > 0 && (n >= wr.maxQueued || wr.queuedBytes+it.size > wr.maxQueuedBytes)
}

// overflowLocked records that a write was not queued, n being queued,
// and returns the error that says so. wr.mu is held.
func (wr *writer) overflowLocked(n int) error {
	cause := wr.broken
	if cause == nil {
		cause = wr.failing
	}
	if cause == nil && len(wr.inflight) > 0 {
		cause = fmt.Errorf("the state database has taken no write for %s", time.Since(wr.inflightSince).Round(time.Millisecond))
	}
	if cause == nil {
		cause = errors.New("the state database takes writes slower than they come")
	}
	err := fmt.Errorf("%w: %d writes (%d MB) already wait for the state database (%v); free disk space or stop the process that holds it locked", ErrLogUnwritable, n, wr.queuedBytes>>20, cause)
	wr.lossPending = true
	return err
}

// isBroken reports whether a batch was dropped and no commit has
// succeeded since.
func (wr *writer) isBroken() bool {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	return wr.broken != nil
}

// pending returns the events of session id with seq >= from that are
// queued or being committed, in order.
func (wr *writer) pending(id string, from uint64) []*event.Event {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	var out []*event.Event
	for _, l := range [][]*write{wr.inflight, wr.queue} {
		for _, it := range l {
			if e := it.w.Event; e != nil && e.SessionID == id && e.Seq >= from {
				out = append(out, e)
			}
		}
	}
	return out
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
	wr.room.Broadcast()
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
					// The linger is over: let the goroutines that
					// are ready run first. On one P (internal/procs)
					// the commit would otherwise run before a
					// client's events that wait in the run queue.
					runtime.Gosched()
				}
				continue
			}
		}
		batch := wr.queue[:n:n]
		wr.queue = wr.queue[n:]
		wr.inflight, wr.inflightSince = batch, time.Now()
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
			if !isMarker(it.w) {
				ws = append(ws, it.w)
			}
		}
		var err error
		if len(ws) > 0 {
			err = wr.commit(&bw, ws)
		}
		wr.mu.Lock()
		wr.inflight = nil
		if err == nil {
			wr.failing = nil
		}
		for _, it := range batch {
			wr.queuedBytes -= it.size
		}
		wr.room.Broadcast()
		if wr.overflowing && len(wr.queue) < wr.maxQueued/2 && wr.queuedBytes < wr.maxQueuedBytes/2 {
			wr.overflowing = false
		}
		recovered := false
		if err == nil && len(ws) > 0 && (wr.broken != nil || wr.lossPending) {
			wr.log.Info("the session log is written again", "writes", len(ws))
			wr.broken, wr.lossPending, recovered = nil, false, true
		}
		if err != nil {
			err = fmt.Errorf("%w: %w", ErrLogUnwritable, err)
			wr.broken, wr.lossPending = err, true
		}
		wr.mu.Unlock()
		if recovered && wr.onRecovered != nil {
			go wr.onRecovered()
		}
		var lost []*write
		for _, it := range batch {
			it.err = err
			close(it.done)
			if err != nil && it.published {
				lost = append(lost, it)
			}
		}
		if err != nil {
			wr.log.Error("storing the session log failed: writes lost", "writes", len(ws), "events_published", len(lost), "error", err)
			if len(lost) > 0 && wr.onLost != nil {
				go wr.onLost(lost, err)
			}
		}
		// The batch was the head of the queue's array, which the queue
		// goes on using: without this its writes (events with their
		// results, audit rows) stayed reachable until the array was
		// replaced, after a burst for good.
		clear(batch)
	}
}

// commit writes ws in one transaction, retrying with backoff while it
// fails: up to retryLocked while the database is locked, retryFailing on
// other errors, retryBroken while the writer is broken. *bw is opened as
// needed and closed after a failure (a fresh connection for the next try).
func (wr *writer) commit(bw **store.BatchWriter, ws []store.Write) error {
	start := time.Now()
	backoff := firstBackoff
	for attempt := 1; ; attempt++ {
		var err error
		if *bw == nil {
			*bw, err = wr.st.NewBatchWriter(context.Background())
		}
		if err == nil {
			err = (*bw).Write(context.Background(), ws)
		}
		if err == nil {
			if attempt > 1 {
				wr.log.Info("stored the session log after retrying", "attempts", attempt, "waited", time.Since(start).Round(time.Millisecond).String())
			}
			return nil
		}
		if *bw != nil {
			(*bw).Close()
			*bw = nil
		}
		wr.mu.Lock()
		wr.failing = err
		wr.room.Broadcast() // writers held back by a full queue now drop theirs
		window := wr.retryFailing
		if errors.Is(err, store.ErrLocked) {
			window = wr.retryLocked
		}
		if wr.broken != nil {
			window = min(window, wr.retryBroken)
		}
		wr.mu.Unlock()
		if time.Since(start)+backoff > window {
			return err
		}
		if attempt == 1 {
			wr.log.Warn("storing the session log failed: retrying", "writes", len(ws), "retry_for", window.String(), "error", err)
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, maxBackoff)
	}
}
