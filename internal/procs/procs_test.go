package procs

import (
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// waitProcs waits for GOMAXPROCS to become want (the narrowing runs on a
// timer) and fails after a few NarrowAfter.
func waitProcs(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * NarrowAfter)
	for runtime.GOMAXPROCS(0) != want {
		if time.Now().After(deadline) {
			t.Fatalf("GOMAXPROCS is %d, want %d", runtime.GOMAXPROCS(0), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func governed(t *testing.T) int {
	t.Helper()
	if os.Getenv("GOMAXPROCS") != "" {
		t.Skip("GOMAXPROCS is set in the environment: Govern leaves it alone")
	}
	max := runtime.GOMAXPROCS(0)
	if max < 2 {
		t.Skip("one CPU: nothing to govern")
	}
	stop := Govern()
	t.Cleanup(func() {
		stop()
		if got := runtime.GOMAXPROCS(0); got != max {
			t.Errorf("after stop GOMAXPROCS is %d, want the default %d", got, max)
		}
	})
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("Govern left GOMAXPROCS at %d, want 1", got)
	}
	if got := Width(); got != max {
		t.Fatalf("Width() = %d while narrow, want the default %d", got, max)
	}
	return max
}

func TestBusyWidensAtTwoAndNarrowsAfter(t *testing.T) {
	max := governed(t)
	done1 := Busy()
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("one flow of work: GOMAXPROCS %d, want 1", got)
	}
	done2 := Busy()
	if got := runtime.GOMAXPROCS(0); got != max {
		t.Fatalf("two flows: GOMAXPROCS %d, want %d at once", got, max)
	}
	done2()
	// Still wide for NarrowAfter: a burst does not flap.
	if got := runtime.GOMAXPROCS(0); got != max {
		t.Fatalf("right after the second ended: GOMAXPROCS %d, want still %d", got, max)
	}
	waitProcs(t, 1)
	done1()
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("GOMAXPROCS %d after the last flow, want 1", got)
	}
}

func TestWideWhileItRuns(t *testing.T) {
	max := governed(t)
	done := Wide()
	if got := runtime.GOMAXPROCS(0); got != max {
		t.Fatalf("Wide: GOMAXPROCS %d, want %d", got, max)
	}
	// A flow that starts and ends meanwhile does not narrow it.
	Busy()()
	time.Sleep(2 * NarrowAfter)
	if got := runtime.GOMAXPROCS(0); got != max {
		t.Fatalf("while Wide holds: GOMAXPROCS %d, want %d", got, max)
	}
	done()
	waitProcs(t, 1)
}

// A narrowing set off before the process widened again does not narrow
// it while it is wide.
func TestStaleNarrowingDoesNothing(t *testing.T) {
	max := governed(t)
	Wide()()
	time.Sleep(NarrowAfter / 2)
	done := Wide() // before the first narrowing fires
	time.Sleep(NarrowAfter)
	if got := runtime.GOMAXPROCS(0); got != max {
		t.Fatalf("a stale narrowing fired: GOMAXPROCS %d, want %d", got, max)
	}
	done()
	waitProcs(t, 1)
}

func TestConcurrentFlows(t *testing.T) {
	max := governed(t)
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				Busy()()
				Wide()()
			}
		}()
	}
	wg.Wait()
	if n := runtime.GOMAXPROCS(0); n != 1 && n != max {
		t.Fatalf("GOMAXPROCS %d: neither narrow nor wide", n)
	}
	waitProcs(t, 1)
}

// Without Govern, nothing changes.
func TestUngovernedDoesNothing(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	done := Wide()
	d2, d3 := Busy(), Busy()
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Fatalf("ungoverned: GOMAXPROCS %d, want %d", got, before)
	}
	done()
	d2()
	d3()
	if got := Width(); got != before {
		t.Fatalf("ungoverned Width() = %d, want %d", got, before)
	}
}
