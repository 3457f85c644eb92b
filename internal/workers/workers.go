// Package workers runs functions on goroutines that are kept for a while
// after they return, so that the next function finds a goroutine whose
// stack has already grown.
//
// A new goroutine starts on a small stack (2–8 KB) and copies it each time
// it doubles. A tool call goes deep (JSON decoding by reflection, schema
// validation, the tool itself): measured on tackled's Read path, growing
// the stacks of the turn's and the handler's fresh goroutines cost about
// 5 % of the daemon's CPU per call. A goroutine of a pool keeps its stack
// from one function to the next (the GC shrinks it only when it stays
// mostly unused).
package workers

import (
	"sync"
	"time"
)

// Pool runs functions on its goroutines, starting one when none is idle.
// There is no bound on how many run at once: Go never waits for a worker.
// A function must leave its goroutine as it found it: not locked to its
// thread (runtime.LockOSThread without its Unlock), or the functions after
// it would run on that thread, in whatever state it was left.
// The zero value is not usable; see New.
type Pool struct {
	idle  time.Duration
	work  chan func() // unbuffered: a send succeeds only if a worker waits
	stop  chan struct{}
	once  sync.Once
	group sync.WaitGroup
}

// New returns a pool whose goroutines end once they have waited idle for
// work that long.
func New(idle time.Duration) *Pool {
	return &Pool{idle: idle, work: make(chan func()), stop: make(chan struct{})}
}

// Go runs f on a goroutine of the pool: an idle one, or a new one. After
// Close it still runs f, on a goroutine that ends with it.
func (p *Pool) Go(f func()) {
	select {
	case p.work <- f:
		return
	default:
	}
	p.group.Add(1)
	go p.worker(f)
}

func (p *Pool) worker(f func()) {
	defer p.group.Done()
	var t *time.Timer
	for {
		f()
		f = nil
		if t == nil {
			t = time.NewTimer(p.idle)
		} else {
			t.Reset(p.idle)
		}
		select {
		case f = <-p.work:
		case <-t.C:
			return
		case <-p.stop:
			t.Stop()
			return
		}
	}
}

// Close ends the idle goroutines and, as each finishes its function, the
// busy ones; it does not wait for them (see Wait).
func (p *Pool) Close() {
	p.once.Do(func() { close(p.stop) })
}

// Wait blocks until every goroutine of the pool has ended: after Close,
// once the functions running have returned.
func (p *Pool) Wait() {
	p.group.Wait()
}
