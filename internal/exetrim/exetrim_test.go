package exetrim

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// written is data of the executable that the test changes: its page is a
// writable mapping, which Drop must leave alone.
var written = strings.Repeat("x", 8192)

func resident(t *testing.T) (droppable, other int64) {
	t.Helper()
	rs, err := Regions()
	if err != nil {
		t.Fatal(err)
	}
	for i := range rs {
		if rs[i].droppable() {
			droppable += rs[i].Rss
		} else {
			other += rs[i].Rss
		}
	}
	return droppable, other
}

// TestDrop: the test binary's text and read-only data are mapped, Drop
// unmaps them, and the program runs on — code and tables it needs again are
// mapped back — with its written data intact.
func TestDrop(t *testing.T) {
	written = written[:4096] + "y" + written[4097:]
	rs, err := Regions()
	if err != nil {
		t.Fatal(err)
	}
	var exec, ro, rw bool
	for _, r := range rs {
		switch {
		case strings.HasPrefix(r.Perms, "r-x"):
			exec = true
		case strings.HasPrefix(r.Perms, "r--"):
			ro = true
		case strings.HasPrefix(r.Perms, "rw"):
			rw = true
			if r.droppable() {
				t.Errorf("a writable mapping counted as droppable: %+v", r)
			}
		}
	}
	if !exec || !ro || !rw {
		t.Fatalf("mappings of the executable: %+v (want text, read-only data and data)", rs)
	}
	before, _ := resident(t)
	n, err := Drop()
	if err != nil {
		t.Fatal(err)
	}
	after, _ := resident(t)
	t.Logf("resident in droppable mappings: %d KB before, Drop unmapped %d KB, %d KB right after", before>>10, n>>10, after>>10)
	// Reading smaps again maps some back at once (a fault maps its
	// neighbours too): in a binary this small, a good part.
	// (What runs between the two reads of smaps maps a few pages too.)
	if n < before*9/10 || after >= n {
		t.Errorf("Drop: %d bytes, resident %d → %d: want all of it unmapped, less mapped again", n, before, after)
	}
	// Work that needs code and tables again.
	re := regexp.MustCompile(`^(\d+)-(\w+)$`)
	if m := re.FindStringSubmatch(fmt.Sprintf("%d-%s", 42, "ok")); len(m) != 3 || m[2] != "ok" {
		t.Errorf("after Drop: %q", m)
	}
	if written[4096] != 'y' || len(written) != 8192 {
		t.Errorf("written data changed by Drop")
	}
	if _, err := Drop(); err != nil {
		t.Errorf("a second Drop: %v", err)
	}
}

// TestWhenIdle: one trim once the process has waited a whole period after
// start-up, one after each burst of activity once it stands still, none
// while nothing happens; it returns when its context ends.
func TestWhenIdle(t *testing.T) {
	var trims, activity atomic.Int64
	trim = func() (int64, error) { trims.Add(1); return 0, nil }
	defer func() { trim = Trim }()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		WhenIdle(ctx, 5*time.Millisecond, activity.Load, nil)
	}()
	waitFor := func(n int64) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); trims.Load() < n; {
			if time.Now().After(deadline) {
				t.Fatalf("%d trims, want %d", trims.Load(), n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitFor(1) // after start-up
	for range 20 {
		activity.Add(1)
		time.Sleep(time.Millisecond)
	}
	waitFor(2) // after the burst (a stall of this goroutine mid-burst may add one)
	time.Sleep(20 * time.Millisecond)
	n := trims.Load()
	time.Sleep(100 * time.Millisecond)
	if m := trims.Load(); m != n {
		t.Errorf("%d trims, then %d after a quiet spell of 20 periods: want none while nothing happens", n, m)
	}
	cancel()
	wg.Wait()
}
