// Package procs sets how many threads run the process's Go code at once
// (GOMAXPROCS) from what the process is doing: one while it does one thing
// at a time, the default (the CPUs it may use) while it does several or
// runs work that is parallel by design.
//
// Measured on tackled (a Read through the daemon, an MCP echo), a call is
// a chain of goroutines handing work to each other: the stream's reader,
// the turn, the tool, the event log's writer, gRPC's writer. With a second
// P idle, each hand-over wakes a thread on another CPU to run the goroutine
// it made runnable (and that thread spins looking for more work before it
// sleeps again): about 9.5 context switches per call, a third of the
// daemon's CPU in switching tasks. On one P the chain runs on one thread;
// the same calls took 25–30 % less CPU and 15 % less time. But a parallel
// search on one P is ~45 % slower, and two clients' calls at once would
// wait for each other. So the process runs on one P only while nothing
// asks for more:
//
//   - Busy marks one flow of work (a tool call turn): two or more at once
//     widen the process at once;
//   - Wide marks work that is parallel itself (a search's walkers): it
//     widens while it runs.
//
// The process narrows again once neither has asked for NarrowAfter, so
// that a burst of turns does not stop the world at each one (changing
// GOMAXPROCS stops every goroutine for a moment: tens of µs).
//
// Until Govern is called, Busy and Wide do nothing, and GOMAXPROCS is the
// runtime's: tests and other programs of the module are not affected.
// Govern does nothing either when GOMAXPROCS is set in the environment (the
// person chose) or when the process may use one CPU only.
package procs

import (
	"os"
	"runtime"
	"sync"
	"time"
)

// NarrowAfter is how long the process stays wide after the last reason to
// be wide ended.
const NarrowAfter = 500 * time.Millisecond

// state is the governor's; g is the process's one.
type state struct {
	mu     sync.Mutex
	on     bool   // Govern was called and may narrow
	max    int    // the default GOMAXPROCS, what wide means
	busy   int    // Busy holders
	wide   int    // Wide holders
	isWide bool   // GOMAXPROCS is max
	gen    uint64 // of the last narrowing set off; an older one does nothing
}

var g state

// Govern starts setting GOMAXPROCS: it narrows the process to one P now,
// unless the environment sets GOMAXPROCS or the default is one already.
// It returns a function that stops governing and restores the default.
// Calling Govern while it governs does nothing (and returns a no-op).
func Govern() (stop func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.on || os.Getenv("GOMAXPROCS") != "" {
		return func() {}
	}
	n := runtime.GOMAXPROCS(0)
	if n <= 1 {
		return func() {}
	}
	g.on, g.max, g.isWide = true, n, g.busy >= 2 || g.wide > 0
	if !g.isWide {
		runtime.GOMAXPROCS(1)
	}
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if !g.on {
			return
		}
		g.gen++
		g.on, g.isWide = false, false
		runtime.SetDefaultGOMAXPROCS()
	}
}

// Width is how many goroutines parallel work should use: the default
// GOMAXPROCS while Govern governs (what Wide gives it), GOMAXPROCS now
// otherwise.
func Width() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.on {
		return g.max
	}
	return runtime.GOMAXPROCS(0)
}

// Busy marks the start of one flow of work; done marks its end (call it
// exactly once). While two or more are running the process is wide.
func Busy() (done func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.busy++
	if g.busy >= 2 {
		g.widenLocked()
	}
	return busyDone
}

func busyDone() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.busy--
	g.maybeNarrowLocked()
}

// Wide widens the process until done is called (exactly once): for work that
// runs on several goroutines at once by design.
func Wide() (done func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.wide++
	g.widenLocked()
	return wideDone
}

func wideDone() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.wide--
	g.maybeNarrowLocked()
}

func (s *state) widenLocked() {
	if s.on && !s.isWide {
		s.isWide = true
		runtime.GOMAXPROCS(s.max)
	}
}

// maybeNarrowLocked sets the narrowing off once nothing asks to be wide:
// NarrowAfter from now, unless something asks again meanwhile.
func (s *state) maybeNarrowLocked() {
	if !s.on || !s.isWide || s.busy >= 2 || s.wide > 0 {
		return
	}
	s.gen++
	gen := s.gen
	time.AfterFunc(NarrowAfter, func() { s.fire(gen) })
}

func (s *state) fire(gen uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if gen == s.gen && s.on && s.isWide && s.busy < 2 && s.wide == 0 {
		s.isWide = false
		runtime.GOMAXPROCS(1)
	}
}
