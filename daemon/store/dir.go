package store

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/hashicorp/go-hclog"
)

// The modes of everything in the state directory: it holds tool outputs,
// transcripts and the audit log, which no other user may read.
const (
	DirMode  fs.FileMode = 0o700
	FileMode fs.FileMode = 0o600
)

// stateEntries are what tackle keeps in its state directory (design.md,
// "State on disk"): the database with SQLite's files beside it (see
// dbSuffixes), the daemon's log, large tool outputs and MCP servers' logs.
// PrepareDir tightens these and nothing else, so that a --state-dir pointed
// at a directory holding other things changes none of them.
var stateEntries = []string{
	"state.db", "state.db-wal", "state.db-shm", "state.db-journal",
	"tackled.log", "outputs", "mcp-logs",
}

// dbSuffixes are the files SQLite keeps beside a database. SQLite creates
// them with the database file's mode.
var dbSuffixes = []string{"", "-wal", "-shm", "-journal"}

// Change is a permission PrepareDir or OpenWith tightened (or, with Err,
// could not).
type Change struct {
	Path     string
	From, To fs.FileMode // permission bits
	Err      error       // why the chmod failed; nil when it was made
}

// String says what was changed, for the daemon's log.
func (c Change) String() string {
	if c.Err != nil {
		return fmt.Sprintf("%s is mode %04o, open to other users, and could not be changed to %04o: %v", c.Path, c.From, c.To, c.Err)
	}
	return fmt.Sprintf("%s was mode %04o, open to other users: changed to %04o", c.Path, c.From, c.To)
}

// Log writes the change to l as a warning (a state file open to other users
// means tool outputs may have been read).
func (c Change) Log(l hclog.Logger) {
	from, to := fmt.Sprintf("%04o", c.From), fmt.Sprintf("%04o", c.To)
	if c.Err != nil {
		l.Warn("a state file is open to other users and could not be made private", "path", c.Path, "mode", from, "want", to, "error", c.Err)
		return
	}
	l.Warn("a state file was open to other users: made it private", "path", c.Path, "from", from, "to", to)
}

// PrepareDir makes dir tackle's private state directory: it creates it
// (and missing parents) with DirMode; when it exists with permissions for
// the group or others, it changes it to DirMode, and changes what tackle
// keeps in it (state.db and SQLite's files, tackled.log, outputs/,
// mcp-logs/) to FileMode and DirMode — everything below outputs/ and
// mcp-logs/ too. Those entries are tightened whenever they are too open,
// even in a private directory. It returns the changes made, for the caller
// to log; an entry that could not be changed is a Change with Err. It
// refuses (an error, changing nothing) a directory open to others that is
// not the caller's to close: owned by another user, or shared like /tmp
// (sticky bit).
func PrepareDir(dir string) ([]Change, error) {
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return nil, fmt.Errorf("creating state directory %q: %w", dir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("checking state directory %q: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("state directory %q is not a directory: choose another with --state-dir or XDG_STATE_HOME", dir)
	}
	var changes []Change
	wasOpen := tooOpen(fi.Mode())
	if wasOpen {
		if uid, ok := owner(fi); fi.Mode()&fs.ModeSticky != 0 || (ok && uid != os.Geteuid()) {
			return nil, fmt.Errorf("state directory %q (mode %04o, owner uid %d) is shared with other users, and tackle keeps tool outputs there: "+
				"choose a directory of your own with --state-dir or XDG_STATE_HOME", dir, fi.Mode().Perm(), uid)
		}
		c := Change{Path: dir, From: fi.Mode().Perm(), To: DirMode}
		if c.Err = os.Chmod(dir, DirMode); c.Err != nil {
			return nil, fmt.Errorf("making state directory private: %s", c)
		}
		changes = append(changes, c)
	}
	for _, name := range stateEntries {
		p := filepath.Join(dir, name)
		changes = tighten(changes, p)
		if !wasOpen {
			continue
		}
		// The directory was open: whatever was created below it may be too.
		filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
			if err == nil && q != p {
				changes = tighten(changes, q)
			}
			return nil // an unreadable entry is skipped, not fatal
		})
	}
	return changes, nil
}

// tighten changes the file or directory at path (not following a symlink)
// to FileMode or DirMode when it is open to the group or others, appending
// the change to changes. A missing path, a symlink or anything else is left
// alone.
func tighten(changes []Change, path string) []Change {
	fi, err := os.Lstat(path)
	if err != nil || !tooOpen(fi.Mode()) {
		return changes
	}
	var to fs.FileMode
	switch {
	case fi.Mode().IsRegular():
		to = FileMode
	case fi.IsDir():
		to = DirMode
	default:
		return changes
	}
	c := Change{Path: path, From: fi.Mode().Perm(), To: to}
	c.Err = os.Chmod(path, to)
	return append(changes, c)
}

// tooOpen reports whether mode gives the group or others any permission.
func tooOpen(mode fs.FileMode) bool { return mode.Perm()&0o077 != 0 }

// owner returns the uid owning the file, if the system says.
func owner(fi fs.FileInfo) (int, bool) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), true
	}
	return 0, false
}

// createPrivate creates the database file at path with FileMode unless it
// exists, and tightens it and SQLite's files beside it when they are open
// to others: SQLite creates a database 0644 and its -wal and -shm files
// with the database's mode, so a database created first keeps them all
// private. The contents of an existing file are not touched.
func createPrivate(path string) ([]Change, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, FileMode)
	if err != nil {
		return nil, fmt.Errorf("creating state database %q: %w", path, err)
	}
	f.Close()
	var changes []Change
	for _, suffix := range dbSuffixes {
		changes = tighten(changes, path+suffix)
	}
	return changes, nil
}
