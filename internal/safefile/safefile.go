// Package safefile is the one way tackle reads a file that someone other
// than the user may have planted: settings and .mcp.json files, the trust
// store, ~/.claude.json, skills (SKILL.md and legacy command files), agent
// files, memory files (CLAUDE.md) and ignore files. A repository is cloned
// before anyone decides to trust it, so such a file may be a symlink to
// /dev/zero, a FIFO or a huge file; reading one must neither hang nor
// exhaust the daemon.
//
// Read follows symlinks (a settings file linked to a regular file works)
// but refuses anything that is not a regular file. It looks with stat
// first, so that a device is not even opened, and decides with fstat on the
// descriptor it opened, so the file cannot be swapped between the check and
// the read. It opens without blocking (O_NONBLOCK: a FIFO with no writer
// opens at once and is then refused) and without taking a terminal as the
// controlling one (O_NOCTTY), and it reads at most limit+1 bytes whatever
// the file's size claims to be (files in /proc report 0).
//
// The limits for each kind of file are the Limit constants below, in one
// place. The package only reads: it never writes, creates or changes a
// file, and it imports nothing but the standard library.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// The largest file of each kind that Read is asked to accept. Each is far
// above what a real file of its kind holds, and low enough that many planted
// files together cannot exhaust the daemon.
const (
	// LimitSettings is for settings files (tackle's and Claude Code's
	// settings.json and settings.local.json, managed settings, which also
	// hold hooks), .mcp.json and tackle's trust store. Real ones are a few
	// KiB.
	LimitSettings = 1 << 20
	// LimitClaudeJSON is for ~/.claude.json, where Claude Code keeps not
	// only MCP servers but per-project state and history: it grows to
	// several MiB on a machine in daily use, so it gets 16 MiB. It is the
	// user's own file, never a repository's.
	LimitClaudeJSON = 16 << 20
	// LimitSkill is for a SKILL.md or a legacy command file: 8 MiB, as
	// skills always had (a body of 1 MB, reference material pasted in,
	// parses whole).
	LimitSkill = 8 << 20
	// LimitAgent is for an agent definition (.claude/agents/*.md):
	// frontmatter and a system prompt.
	LimitAgent = 1 << 20
	// LimitMemory is for a memory file (CLAUDE.md and the files it
	// imports), sent with every prompt: Claude Code already warns at 40k
	// characters.
	LimitMemory = 1 << 20
	// LimitIgnore is for a repository's .gitignore and .ignore files, which
	// Grep and Glob read as they walk: the largest real ones are some
	// hundred KiB.
	LimitIgnore = 1 << 20
)

// ErrNotRegular is wrapped by the error for a path that is not a regular
// file: a directory, a FIFO, a device, a socket.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped by the error for a file larger than the limit.
var ErrTooLarge = errors.New("file too large")

// Error is the error of every failed Read. It matches ErrNotRegular,
// ErrTooLarge or the system's error (so errors.Is(err, fs.ErrNotExist) and
// errors.Is(err, fs.ErrPermission) work) with errors.Is.
type Error struct {
	// Path is the path as given to Read.
	Path string
	// Reason says why, as words that follow the path: "is a FIFO, not a
	// regular file", "is 3 MiB, over the limit of 1 MiB", "no such file or
	// directory".
	Reason string
	// Err is ErrNotRegular, ErrTooLarge or the system's error.
	Err error
}

// Error returns "path: reason".
func (e *Error) Error() string { return e.Path + ": " + e.Reason }

// Unwrap returns e.Err.
func (e *Error) Unwrap() error { return e.Err }

// openFlags open a file for reading without blocking on a FIFO (or a device
// waiting for a carrier), without making a terminal the controlling one,
// and without leaking the descriptor into child processes. O_NONBLOCK does
// nothing for a regular file.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY | syscall.O_CLOEXEC

// Read returns the contents of the regular file at path (following
// symlinks), or an *Error when it cannot be opened, is not a regular file
// (ErrNotRegular) or holds more than limit bytes (ErrTooLarge). It never
// blocks on a FIFO or a device and never reads more than limit+1 bytes.
// limit is one of the Limit constants, or another non-negative size; a
// negative limit panics. Read is safe for concurrent use.
func Read(path string, limit int64) ([]byte, error) {
	if limit < 0 {
		panic(fmt.Sprintf("safefile.Read(%q): negative limit %d", path, limit))
	}
	// A stat first, so that in the usual case a device is never even opened
	// (opening some has effects: a watchdog, a tape drive). It cannot be
	// trusted (the path may change before the open): fstat in readOpened
	// decides.
	fi, err := os.Stat(path)
	if err != nil {
		return nil, sysError(path, err)
	}
	if err := check(path, fi, limit); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, openFlags, 0)
	if err != nil {
		return nil, sysError(path, err)
	}
	defer f.Close()
	return readOpened(path, f, limit)
}

// readOpened is Read after the open: it checks f with fstat, which decides
// what the file is, and reads it.
func readOpened(path string, f *os.File, limit int64) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, sysError(path, err)
	}
	if err := check(path, fi, limit); err != nil {
		return nil, err
	}
	// The size is a hint only (0 for /proc files, stale if the file grows):
	// read until EOF, but never past limit+1 bytes.
	data := make([]byte, 0, max(fi.Size()+1, min(512, limit+1)))
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)] // grow
		}
		end := min(int64(cap(data)), limit+1)
		n, err := f.Read(data[len(data):end])
		data = data[:len(data)+n]
		if int64(len(data)) > limit {
			return nil, tooLarge(path, -1, limit)
		}
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, sysError(path, err)
		}
	}
}

// check refuses a file that is not regular or says it is over limit.
func check(path string, fi fs.FileInfo, limit int64) error {
	if !fi.Mode().IsRegular() {
		return notRegular(path, fi.Mode())
	}
	if fi.Size() > limit {
		return tooLarge(path, fi.Size(), limit)
	}
	return nil
}

// sysError is an *Error for a system error, without the path and operation
// an *fs.PathError repeats.
func sysError(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &Error{Path: path, Reason: err.Error(), Err: err}
}

// notRegular is the error for a path whose file has mode, not a regular
// file's.
func notRegular(path string, mode fs.FileMode) error {
	var what string
	switch {
	case mode.IsDir():
		what = "is a directory"
	case mode&fs.ModeNamedPipe != 0:
		what = "is a FIFO"
	case mode&fs.ModeSocket != 0:
		what = "is a socket"
	case mode&fs.ModeCharDevice != 0:
		what = "is a character device"
	case mode&fs.ModeDevice != 0:
		what = "is a block device"
	default:
		what = fmt.Sprintf("has mode %v", mode)
	}
	reason := what + ", not a regular file"
	// Only on this error path: say where a symlink leads, as a person
	// reading the problem wonders why their settings file is a device.
	if li, err := os.Lstat(path); err == nil && li.Mode()&fs.ModeSymlink != 0 {
		if target, err := filepath.EvalSymlinks(path); err == nil {
			reason += fmt.Sprintf(" (it is a symlink to %s)", target)
		}
	}
	return &Error{Path: path, Reason: reason, Err: ErrNotRegular}
}

// tooLarge is the error for a file over limit; size is -1 when the file
// turned out larger than it said.
func tooLarge(path string, size, limit int64) error {
	reason := "is over the limit of " + formatSize(limit)
	if size >= 0 {
		reason = fmt.Sprintf("is %s, over the limit of %s", formatSize(size), formatSize(limit))
	}
	return &Error{Path: path, Reason: reason, Err: ErrTooLarge}
}

// formatSize writes n bytes in the largest unit that divides it exactly
// ("1 MiB", "1536 KiB"), else in bytes.
func formatSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
