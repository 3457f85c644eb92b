// Package pollfd turns a process's inherited stdin or stdout, when it is a
// pipe or a socket, into a file that Go's network poller waits on.
//
// A client process that speaks a protocol on stdio (`tackle mcp serve`,
// `tackle acp`, `tackle bridge`) reads its stdin all the time. The pipe its
// parent gave it is in blocking mode, so os.Stdin reads it with a blocking
// read(2): a thread sits in the kernel, the runtime's monitor takes its P
// away after 20 µs and hands it to another thread, and when a message
// arrives the reading thread has to find a P again — futex wake-ups and
// thread switches on every message. Measured on mcp serve's echo benchmark
// (strace -c -f): ~25 system calls per call, 7 of them nanosleep and 6 futex.
// A file in non-blocking mode is read by the goroutine parking in the
// poller, on the one thread that runs the process's Go code.
//
// Non-blocking mode belongs to the open file description, which the
// process may share (a socket that is both stdin and stdout, a pipe another
// process reads too). Open therefore converts pipes and sockets only — never
// a terminal or a regular file —, dups the descriptor so that closing the
// returned file leaves fd 0 and 1 alone, and its restore function puts the
// description back in blocking mode. A process that uses both stdin and
// stdout opens both: when they are one description (a socket), a write
// through a file the poller does not know would fail with EAGAIN instead of
// waiting, so the second Open converts it too.
package pollfd

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Open returns a pollable file for f's descriptor and a function that closes
// it and restores the mode the description had, if f is a pipe or a socket
// that the poller does not wait on; else f itself (and a no-op): a file that
// is pollable already (os.Pipe's, a test's) stays as it is, and a terminal or
// a regular file is left alone.
func Open(f *os.File) (*os.File, func()) {
	if f.SetReadDeadline(time.Time{}) == nil {
		return f, func() {} // pollable already
	}
	rc, err := f.SyscallConn() // unlike Fd, leaves the file's mode alone
	if err != nil {
		return f, func() {}
	}
	fd, dup, wasBlocking := -1, -1, false
	if rc.Control(func(u uintptr) {
		fd = int(u)
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil {
			return
		}
		if t := st.Mode & unix.S_IFMT; t != unix.S_IFIFO && t != unix.S_IFSOCK {
			return
		}
		flags, err := unix.FcntlInt(u, unix.F_GETFL, 0)
		if err != nil {
			return
		}
		// Non-blocking already: another descriptor of the description
		// was opened here (stdin and stdout one socket).
		wasBlocking = flags&unix.O_NONBLOCK == 0
		if d, err := unix.FcntlInt(u, unix.F_DUPFD_CLOEXEC, 0); err == nil {
			dup = d
		}
	}) != nil || dup < 0 {
		return f, func() {}
	}
	if err := unix.SetNonblock(dup, true); err != nil {
		unix.Close(dup)
		return f, func() {}
	}
	p := os.NewFile(uintptr(dup), f.Name()) // non-blocking: NewFile registers it with the poller
	return p, func() {
		p.Close()
		if wasBlocking {
			_ = unix.SetNonblock(fd, false) // fd is f's, still open
		}
	}
}
