package fs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// The read-state rules, shared by every tool that changes a file:
//
//   - An existing file must have been read in this session (Read records a
//     tool.FileState through its Modifier); Write needs a full read, the
//     other editing tools accept a partial one.
//   - It must not have changed since: same size and mtime as recorded, or,
//     when those differ, the same SHA-256 content hash (a touch or a rewrite
//     with the same bytes is not a change).
//   - Every successful write records the new state (full), so the next edit
//     needs no new Read.
//
// States are keyed by the real path (symlinks resolved), so a file read
// through a link and edited through its target is the same file.

// Model-facing texts, as Claude Code words them.
const (
	msgNotRead  = "File has not been read yet. Read it first before writing to it."
	msgModified = "File has been modified since read, either by the user or by a linter. Read it again before attempting to write it."
)

// absPath checks that p is an absolute path and returns it cleaned.
func absPath(env tool.Env, p string) (string, error) {
	if p == "" {
		return "", errors.New("file_path is empty: give the absolute path of the file")
	}
	if !filepath.IsAbs(p) {
		msg := fmt.Sprintf("file_path must be an absolute path, not a relative path: %q.", p)
		if env != nil && env.Cwd() != "" {
			msg += fmt.Sprintf(" Relative to the working directory %s it would be %q: call the tool again with that absolute path.",
				env.Cwd(), filepath.Join(env.Cwd(), p))
		}
		return "", errors.New(msg)
	}
	return filepath.Clean(p), nil
}

// insideDirs reports whether the real path p is inside one of dirs, whose
// symlinks the session has resolved (tool.Env.WorkingDirs).
func insideDirs(p string, dirs []string) bool {
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if p == d || d == string(filepath.Separator) {
			return true
		}
		if strings.HasPrefix(p, d+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// accessFor builds the Access of a call on file_path: a read (Reads) or an
// edit (Writes) of its real path. A change to a protected path (tool.ProtectedPath,
// checked on the path as given and on its real path) is always asked.
func accessFor(call *tool.Call, kind tool.AccessKind, filePath string) (tool.Access, error) {
	p, err := absPath(call.Env, filePath)
	if err != nil {
		return tool.Access{}, err
	}
	r := tool.RealPath(p)
	if m, ok := call.Memo.(*decoded); ok && sameBytes(m.input, call.Input) {
		m.path, m.real = p, r
	}
	var dirs []string
	if call.Env != nil {
		dirs = call.Env.WorkingDirs()
	}
	acc := tool.Access{Kind: kind, Paths: []string{r}, InsideWorkingDirs: insideDirs(r, dirs)}
	if kind != tool.AccessEdit {
		acc.Reads = []string{r}
		return acc, nil
	}
	acc.Writes = []string{r}
	for _, q := range []string{r, p} {
		if name := tool.ProtectedPath(q); name != "" {
			acc.AlwaysAsk = fmt.Sprintf("%s is a protected path (%s): changes to it are always asked", q, name)
			break
		}
	}
	return acc, nil
}

// realPathOf returns the real path (tool.RealPath) of the file opened at p
// whose info is fi: the one CheckPermission resolved for this call when it
// still names that very file (one stat, where resolving p again costs an
// lstat of each of its components), else p resolved again.
func realPathOf(call *tool.Call, p string, fi fs.FileInfo) string {
	if m, ok := call.Memo.(*decoded); ok && m.path == p && m.real != "" && sameBytes(m.input, call.Input) {
		if rfi, err := os.Lstat(m.real); err == nil && os.SameFile(fi, rfi) {
			return m.real
		}
	}
	return tool.RealPath(p)
}

// lookupState finds the recorded state of a file: by its real path first,
// then by the path as given.
func lookupState(env tool.Env, clean, real string) (tool.FileState, bool) {
	if env == nil {
		return tool.FileState{}, false
	}
	if st, ok := env.FileState(real); ok {
		return st, true
	}
	if clean != real {
		return env.FileState(clean)
	}
	return tool.FileState{}, false
}

// record returns a Modifier that records st in the session.
func record(st tool.FileState) tool.Modifier {
	return func(m tool.Mutator) { m.RecordFile(st) }
}

// unchanged reports whether a file whose current info is fi and content is
// content (nil if not loaded) is still what st recorded. It reads the file at
// real to hash it only when size or mtime differ and content is nil.
func unchanged(ctx context.Context, st tool.FileState, fi fs.FileInfo, real string, content []byte) (bool, error) {
	if fi.Size() == st.Size && fi.ModTime().Equal(st.ModTime) {
		return true, nil
	}
	if fi.Size() != st.Size || st.Hash == "" {
		return false, nil
	}
	var h string
	if content != nil {
		h = hashBytes(content)
	} else {
		var err error
		if h, err = hashFile(ctx, real); err != nil {
			return false, err
		}
	}
	return h == st.Hash, nil
}

func hashBytes(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func hashFile(ctx context.Context, p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", fmt.Errorf("hashing file %q: %w", p, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, ctxReader{ctx, f}); err != nil {
		return "", fmt.Errorf("hashing file %q: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ctxReader stops reading when its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// notExistError is the model-facing text for a missing file.
func notExistError(env tool.Env, p, hint string) error {
	msg := "File does not exist: " + p + "."
	if env != nil && env.Cwd() != "" {
		msg += " Current working directory: " + env.Cwd() + "."
	}
	return errors.New(msg + " " + hint)
}

// statError turns a stat or open failure into a model-facing error.
func statError(env tool.Env, p string, err error, hint string) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return notExistError(env, p, hint)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("permission denied reading %s: the daemon's user may not read it. Check the file's permissions (Bash `ls -l`)", p)
	default:
		return fmt.Errorf("reading %s: %v", p, err)
	}
}
