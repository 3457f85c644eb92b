package workers

import (
	"bytes"
	"runtime"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// goid returns the calling goroutine's id, from its stack trace's header.
func goid() uint64 {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	buf = bytes.TrimPrefix(buf, []byte("goroutine "))
	id, _ := strconv.ParseUint(string(buf[:bytes.IndexByte(buf, ' ')]), 10, 64)
	return id
}

// run runs f on p and waits for it, returning the id of its goroutine.
func run(p *Pool) uint64 {
	ids := make(chan uint64, 1)
	p.Go(func() { ids <- goid() })
	return <-ids
}

func TestAnIdleWorkerRunsTheNextFunction(t *testing.T) {
	p := New(time.Hour)
	defer func() { p.Close(); p.Wait() }()
	first := run(p)
	// The worker needs a moment to get back to waiting; until then a
	// second goroutine may start, and from then on the pool reuses one.
	deadline := time.Now().Add(10 * time.Second)
	for run(p) != first {
		if time.Now().After(deadline) {
			t.Fatal("every function ran on a new goroutine")
		}
		first = run(p)
	}
}

func TestABusyPoolStartsAnotherWorker(t *testing.T) {
	p := New(time.Hour)
	defer func() { p.Close(); p.Wait() }()
	release := make(chan struct{})
	started := make(chan struct{})
	p.Go(func() { close(started); <-release })
	<-started
	// The only worker is busy until the second function has run: a pool
	// that queued it would never run it.
	done := make(chan struct{})
	p.Go(func() { close(done) })
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the second function did not run while the first was busy")
	}
	close(release)
}

func TestIdleWorkersEnd(t *testing.T) {
	p := New(20 * time.Millisecond)
	run(p)
	ended := make(chan struct{})
	go func() { p.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("an idle worker outlived its idle time")
	}
}

func TestCloseEndsWorkers(t *testing.T) {
	p := New(time.Hour)
	run(p)
	release := make(chan struct{})
	p.Go(func() { <-release })
	p.Close()
	close(release)
	ended := make(chan struct{})
	go func() { p.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("workers outlived Close")
	}
	// A function given after Close still runs.
	done := make(chan struct{})
	p.Go(func() { close(done) })
	<-done
	p.Wait()
}
