package dispatch

import (
	"sync"
	"time"

	"github.com/tackle-agent/tackle/daemon/event"
)

const (
	// progressInterval spaces call_progress events of one call: at most ~20/s.
	progressInterval = 50 * time.Millisecond
	// maxProgressBuf bounds the progress text held between two events; older
	// text is dropped first (progress is droppable by contract).
	maxProgressBuf = 256 << 10
)

// progressSink coalesces a handler's progress into call_progress events.
// The handler's Progress func only appends to a buffer under a mutex and
// never waits for the log; a flusher goroutine, started on the first
// progress, appends at most one event per progressInterval.
type progressSink struct {
	emit func(text string)

	mu      sync.Mutex // guards the fields below
	buf     []byte
	dropped bool
	started bool
	stopped bool

	kick chan struct{} // capacity 1
	stop chan struct{}
	done chan struct{}
}

func newProgressSink(emit func(string)) *progressSink {
	return &progressSink{emit: emit, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// progress is the tool.Progress handed to the handler.
func (p *progressSink) progress(text string) {
	if text == "" {
		return
	}
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	p.buf = append(p.buf, text...)
	if len(p.buf) > maxProgressBuf {
		p.buf = append(p.buf[:0], p.buf[len(p.buf)-maxProgressBuf/2:]...)
		p.dropped = true
	}
	start := !p.started
	p.started = true
	p.mu.Unlock()
	if start {
		go p.run()
	}
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

func (p *progressSink) take() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.buf) == 0 {
		return ""
	}
	s := string(p.buf)
	if p.dropped {
		s = "[earlier output dropped]\n" + s
		p.dropped = false
	}
	p.buf = p.buf[:0]
	return s
}

func (p *progressSink) run() {
	defer close(p.done)
	t := time.NewTimer(0)
	defer t.Stop()
	<-t.C
	for {
		select {
		case <-p.stop:
			return
		case <-p.kick:
		}
		if s := p.take(); s != "" {
			p.emit(s)
		}
		t.Reset(progressInterval)
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
	}
}

// close stops the flusher and emits what is left. Progress after close is
// ignored (a handler's stray goroutine may still call it).
func (p *progressSink) close() {
	p.mu.Lock()
	p.stopped = true
	started := p.started
	p.mu.Unlock()
	if started {
		close(p.stop)
		<-p.done
	}
	if s := p.take(); s != "" {
		p.emit(s)
	}
}

// progressEvent builds a call_progress event.
func progressEvent(turnID, callID, name, text string) *event.Event {
	return &event.Event{Type: event.CallProgress, TurnID: turnID, CallID: callID, Tool: name, Text: text}
}
