package search

import (
	"fmt"
	"sync/atomic"

	"github.com/tackle-agent/tackle/daemon/tool"
	"golang.org/x/sys/unix"
)

// guard applies a call's tool.ReadGuard to one search and counts the
// paths it skips. The permission stage saw only the search root; the guard
// keeps the walk out of what the session's Read deny rules cover below it.
// A nil *guard denies nothing, at the cost of a nil check. Its methods are
// safe for concurrent use.
type guard struct {
	rg tool.ReadGuard
	// root is the search root as walked; real is the same directory with
	// symbolic links resolved, or "" when that is root itself. Paths below
	// root are asked about under both names.
	root, real string
	skipped    atomic.Int64
}

// newGuard returns the guard of a search under root (absolute, clean), or
// nil when rg is nil (no Read deny rule applies).
func newGuard(rg tool.ReadGuard, root string) *guard {
	if rg == nil {
		return nil
	}
	g := &guard{rg: rg, root: root}
	if r := tool.RealPath(root); r != root {
		g.real = r
	}
	return g
}

// deniesPath reports whether a Read deny rule covers p, an absolute clean
// path at or below the root, and counts it as skipped if so.
func (g *guard) deniesPath(p string) bool {
	if g == nil {
		return false
	}
	denied := g.rg.Denied(p)
	if !denied && g.real != "" && within(p, g.root) {
		denied = g.rg.Denied(rebase(p, g.root, g.real))
	}
	if denied {
		g.skipped.Add(1)
	}
	return denied
}

// deniesLink reports whether st, the status of a file the search opened or
// listed, is a hard link to a file a Read deny rule covers, and counts it
// as skipped if so. Only regular files with more than one link are asked
// about.
func (g *guard) deniesLink(st *unix.Stat_t) bool {
	if g == nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink <= 1 {
		return false
	}
	if !g.rg.DeniedFile(uint64(st.Dev), uint64(st.Ino)) {
		return false
	}
	g.skipped.Add(1)
	return true
}

// count returns the number of paths skipped so far.
func (g *guard) count() int {
	if g == nil {
		return 0
	}
	return int(g.skipped.Load())
}

// rebase returns p, which is from or below it, moved to to. from is not
// "/" (the root directory is its own real path).
func rebase(p, from, to string) string {
	rest := p[len(from):] // "" or "/…"
	if rest == "" {
		return to
	}
	if to == "/" {
		return rest
	}
	return to + rest
}

// skippedNote is the line a result ends with when a guard skipped n > 0
// paths: "(2 paths skipped: a Read deny rule covers them)".
func skippedNote(n int) string {
	them := "them"
	if n == 1 {
		them = "it"
	}
	return fmt.Sprintf("(%s skipped: a Read deny rule covers %s)", plural(n, "path"), them)
}
