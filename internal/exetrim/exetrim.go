// Package exetrim lets an idle process stop mapping the pages of its own
// executable that only earlier work touched.
//
// A Go program's start-up runs the init functions of every package it links,
// scattered over its whole text, and reads type and symbol tables from all
// over its read-only data: after start-up nearly all of a 40 MB binary is
// mapped into the process (the kernel maps a fault's neighbours too), and it
// stays counted in the process's resident size for good, although a call
// afterwards runs a small part of it. Drop unmaps them (madvise
// MADV_DONTNEED): the pages stay in the page cache, clean and shared, and a
// page the process touches again is mapped back by a minor fault, from
// memory. Unmapped, they are also memory the kernel may reclaim first,
// which it avoids for mapped executable pages.
//
// Only private, read-only mappings of the executable that hold no
// anonymous (copy-on-write) page are dropped: dropping a page the process
// wrote, such as a relocated one, would lose the write.
package exetrim

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Region is one mapping of the executable.
type Region struct {
	Start, End uintptr
	Perms      string
	Rss        int64 // bytes resident before Drop
	Anonymous  int64 // bytes of copy-on-write pages
}

// Regions returns the mappings of the running executable, from
// /proc/self/smaps.
func Regions() ([]Region, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return nil, fmt.Errorf("finding the executable: %w", err)
	}
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return nil, fmt.Errorf("reading the mappings: %w", err)
	}
	var out []Region
	var cur *Region
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if key, ok := strings.CutSuffix(f[0], ":"); ok && len(f) >= 2 && !strings.Contains(f[0], "-") {
			if cur == nil {
				continue
			}
			n, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				continue // VmFlags and the like
			}
			switch key {
			case "Rss":
				cur.Rss = n << 10
			case "Anonymous":
				cur.Anonymous = n << 10
			}
			continue
		}
		// A mapping's header: start-end perms offset dev inode [path].
		cur = nil
		if len(f) < 6 || strings.Join(f[5:], " ") != exe {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		out = append(out, Region{Start: uintptr(start), End: uintptr(end), Perms: f[1]})
		cur = &out[len(out)-1]
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the mappings: %w", err)
	}
	return out, nil
}

// droppable reports whether r's pages can be unmapped without losing
// anything: private, not writable, no copy-on-write page.
func (r *Region) droppable() bool {
	return len(r.Perms) == 4 && r.Perms[0] == 'r' && r.Perms[1] != 'w' && r.Perms[3] == 'p' && r.Anonymous == 0
}

// Drop unmaps the resident pages of the executable's droppable mappings
// and returns how many bytes were resident in them.
func Drop() (int64, error) {
	regions, err := Regions()
	if err != nil {
		return 0, err
	}
	var n int64
	for i := range regions {
		r := &regions[i]
		if !r.droppable() || r.Rss == 0 {
			continue
		}
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, r.Start, r.End-r.Start, unix.MADV_DONTNEED); e != 0 {
			return n, fmt.Errorf("madvise %#x-%#x: %w", r.Start, r.End, e)
		}
		n += r.Rss
	}
	return n, nil
}

// Trim returns the heap's free pages to the system and unmaps the
// executable's droppable pages (Drop), whose resident bytes it returns.
func Trim() (int64, error) {
	debug.FreeOSMemory()
	return Drop()
}

// IdleCheck is how long a long-lived client process (mcp serve, acp, the
// bridge) must have been quiet before WhenIdle trims it.
const IdleCheck = 5 * time.Second

// trim is Trim; tests count its calls.
var trim = Trim

// WhenIdle trims (Trim) each time activity has stood still for a whole
// period after it changed, and once after start-up, until ctx ends; warn,
// if not nil, gets Trim's errors. A long-lived process that mostly waits —
// one per editor or MCP client window — then sits at its idle size between
// bursts of work instead of at the peak of the last one.
func WhenIdle(ctx context.Context, period time.Duration, activity func() int64, warn func(error)) {
	t := time.NewTicker(period)
	defer t.Stop()
	trimmed, last := int64(-1), int64(-1)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n := activity()
		if n == last && n != trimmed {
			if _, err := trim(); err != nil && warn != nil {
				warn(err)
			}
			trimmed = n
		}
		last = n
	}
}
