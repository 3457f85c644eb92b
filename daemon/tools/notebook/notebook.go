// Package notebook implements NotebookEdit, the tool that replaces, inserts
// and deletes cells of a Jupyter notebook (.ipynb, nbformat 4), as Claude
// Code's tool of that name does.
//
// It follows the read-state rules of the file tools (daemon/tools/fs): the
// notebook must have been read in the session (Read records a
// tool.FileState, a partial read is enough) and must not have changed since;
// every write is atomic, keeps the file's mode and records the new state
// through the Result's Modifier. The rest of the notebook is written back as
// it was read (json.go), so an edit of one cell changes only that cell in
// the file.
//
// It sees its session only through tool.Env and does not decide
// permissions: CheckPermission reports the notebook as an edit (Edit(...)
// rules and acceptEdits apply) and the pipeline decides. It imports no other
// tool family. The tool is stateless and safe for concurrent use.
package notebook

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// Options configures NotebookEdit. A nil *Options means the defaults.
type Options struct {
	// MaxBytes is the largest notebook NotebookEdit loads (100 MiB, the size over which Claude Code refuses to read a notebook).
	MaxBytes int64
	// MaxDisplayBytes caps the change shown to clients (128 KiB).
	MaxDisplayBytes int
}

func (o *Options) withDefaults() *Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = 100 << 20
	}
	if c.MaxDisplayBytes <= 0 {
		c.MaxDisplayBytes = 128 << 10
	}
	return &c
}

// Tools returns the notebook tools: NotebookEdit.
func Tools(opts *Options) []tool.Tool {
	return []tool.Tool{&NotebookEdit{opts: opts.withDefaults()}}
}

// Model-facing texts of the read-state rules, as Claude Code words them
// (the same as the file tools').
const (
	msgNotRead  = "File has not been read yet. Read it first before writing to it."
	msgModified = "File has been modified since read, either by the user or by a linter. Read it again before attempting to write it."
)

// absPath checks that p is an absolute path and returns it cleaned.
func absPath(env tool.Env, p string) (string, error) {
	if p == "" {
		return "", errors.New("notebook_path is empty: give the absolute path of the .ipynb file")
	}
	if !filepath.IsAbs(p) {
		msg := fmt.Sprintf("notebook_path must be an absolute path, not a relative path: %q.", p)
		if env != nil && env.Cwd() != "" {
			msg += fmt.Sprintf(" Relative to the working directory %s it would be %q: call the tool again with that absolute path.",
				env.Cwd(), filepath.Join(env.Cwd(), p))
		}
		return "", errors.New(msg)
	}
	return filepath.Clean(p), nil
}

// access is the Access of an edit of the notebook at p (absolute, clean):
// its real path, as an edit, always asked for a protected path.
func access(env tool.Env, p string) tool.Access {
	r := tool.RealPath(p)
	var dirs []string
	if env != nil {
		dirs = env.WorkingDirs()
	}
	acc := tool.Access{Kind: tool.AccessEdit, Paths: []string{r}, Writes: []string{r}, InsideWorkingDirs: insideDirs(r, dirs)}
	for _, q := range []string{r, p} {
		if name := tool.ProtectedPath(q); name != "" {
			acc.AlwaysAsk = fmt.Sprintf("%s is a protected path (%s): changes to it are always asked", q, name)
			break
		}
	}
	return acc
}

// insideDirs reports whether the real path p is inside one of dirs, whose
// symlinks the session has resolved (tool.Env.WorkingDirs).
func insideDirs(p string, dirs []string) bool {
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if p == d || d == string(filepath.Separator) || strings.HasPrefix(p, d+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// file is a notebook loaded for an edit, after the read-state rules passed.
type file struct {
	path   string      // the cleaned absolute path the model gave
	target string      // the real path written (symlinks resolved)
	info   fs.FileInfo // its info when loaded
	data   []byte      // its content
}

// load opens the notebook at p (absolute, clean), checks the read-state
// rules and reads it.
func (o *Options) load(ctx context.Context, env tool.Env, p string) (*file, error) {
	nb := &file{path: p, target: tool.RealPath(p)}
	f, err := os.Open(nb.target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		msg := "Notebook file does not exist. (" + p + ")"
		if env != nil && env.Cwd() != "" {
			msg += " Current working directory: " + env.Cwd() + "."
		}
		return nil, errors.New(msg + " Check the path, or use Glob to find the notebook; to create a new notebook, use Write.")
	case errors.Is(err, fs.ErrPermission):
		return nil, fmt.Errorf("permission denied reading %s: the daemon's user may not read it. Check the file's permissions (Bash `ls -l`)", p)
	case err != nil:
		return nil, fmt.Errorf("reading %s: %v", p, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %v", p, err)
	}
	switch {
	case fi.IsDir():
		return nil, fmt.Errorf("%s is a directory, not a notebook. Give the path of a .ipynb file (use Glob with pattern \"**/*.ipynb\" to find one)", p)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file (%s); only regular files can be edited", p, fi.Mode().Type())
	case fi.Size() > o.MaxBytes:
		return nil, fmt.Errorf("%s is too large to edit here (%d bytes, the limit is %d). Clear its outputs first (`jupyter nbconvert --clear-output --inplace` in Bash), then Read it again", p, fi.Size(), o.MaxBytes)
	}
	data, err := io.ReadAll(io.LimitReader(ctxReader{ctx, f}, o.MaxBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("reading %s: %v", p, err)
	}
	st, ok := lookupState(env, p, nb.target)
	if !ok {
		return nil, errors.New(msgNotRead + " (" + p + ")")
	}
	if !unchanged(st, fi, data) {
		return nil, errors.New(msgModified + " (" + p + ")")
	}
	nb.info, nb.data = fi, data
	return nb, nil
}

// lookupState finds the recorded state of a file: by its real path first
// (how Read records it), then by the path as given.
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

// unchanged reports whether a file with info fi and content data is still
// what st recorded: the same size and mtime, or, when the mtime differs, the
// same content hash (a touch or a rewrite with the same bytes is no change).
func unchanged(st tool.FileState, fi fs.FileInfo, data []byte) bool {
	if fi.Size() == st.Size && fi.ModTime().Equal(st.ModTime) {
		return true
	}
	return fi.Size() == st.Size && st.Hash != "" && hashBytes(data) == st.Hash
}

func hashBytes(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
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

// save writes data over the notebook atomically and returns the Modifier
// recording its new, full read-state.
func (nb *file) save(data []byte) (tool.Modifier, error) {
	if err := writeAtomic(nb.target, data, nb.info); err != nil {
		return nil, err
	}
	fi, err := os.Stat(nb.target)
	if err != nil {
		return nil, fmt.Errorf("checking the written notebook %q: %w", nb.target, err)
	}
	st := tool.FileState{Path: tool.RealPath(nb.target), ModTime: fi.ModTime(), Size: fi.Size(), Hash: hashBytes(data)}
	return func(m tool.Mutator) { m.RecordFile(st) }, nil
}

// writeAtomic writes data to a temporary file in the directory of p and
// renames it over p, so a reader sees the old or the new file, never a mix.
// The mode (and, where permitted, the owner) of the old file is kept.
func writeAtomic(p string, data []byte, old fs.FileInfo) (err error) {
	dir, base := filepath.Split(p)
	tmp, err := os.CreateTemp(dir, "."+base+".tackle-*.tmp")
	if err != nil {
		return fmt.Errorf("writing file %q: %w", p, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	mode := old.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
	if sys, ok := old.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Getuid() {
		_ = tmp.Chown(int(sys.Uid), int(sys.Gid)) // best effort: only root may give a file away
	}
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("writing file %q: %w", p, err)
	}
	if err = tmp.Chmod(mode); err != nil {
		return fmt.Errorf("writing file %q: setting mode: %w", p, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("writing file %q: %w", p, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("writing file %q: %w", p, err)
	}
	if err = os.Rename(tmp.Name(), p); err != nil {
		return fmt.Errorf("writing file %q: %w", p, err)
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync() // make the rename durable; not all file systems support it
		d.Close()
	}
	return nil
}

// decoded is a call's input decoded once, for Validate, CheckPermission
// and Run of the same call.
type decoded struct {
	input json.RawMessage // the Input it was decoded from
	in    input
}

// decodeCall decodes call.Input, reusing the value decoded by an earlier
// method of the same call while Input is unchanged.
func decodeCall(call *tool.Call) (input, error) {
	if m, ok := call.Memo.(*decoded); ok && bytes.Equal(m.input, call.Input) {
		return m.in, nil
	}
	var in input
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return input{}, fmt.Errorf("the input is not valid JSON for this tool (%v); send an object that matches the input schema", err)
	}
	call.Memo = &decoded{input: call.Input, in: in}
	return in, nil
}
