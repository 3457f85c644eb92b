// Package tooltest is a small in-memory tool.Env and Mutator for tool unit
// tests; the daemon's real session is daemon/session.
package tooltest

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// Env is a session as a tool sees it (tool.Env) and as the pipeline changes
// it (tool.Mutator). Set its exported fields before the first call; its
// methods are safe for concurrent use.
type Env struct {
	// ID is the session id (SessionID).
	ID string
	// Root is the session root: the first working directory and the
	// current directory until SetCwd moves it.
	Root string
	// Dirs are the working directories (WorkingDirs): Root followed by any
	// additional directories.
	Dirs []string
	// Vars is the environment of the client (Environ); nil means none.
	Vars []string
	// Out is the output directory (OutputDir); tools create it on demand.
	Out string

	mu    sync.Mutex // guards cwd, files and todos
	cwd   string     // "" means Root
	files map[string]tool.FileState
	todos json.RawMessage
}

var (
	_ tool.Env     = (*Env)(nil)
	_ tool.Mutator = (*Env)(nil)
)

// New returns an Env in fresh temporary directories of t: session "test",
// its root a new directory (symlinks resolved) that is the current and only
// working directory, its output directory beside the root, no environment.
func New(t testing.TB) *Env {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := At(filepath.Join(base, "root"))
	if err := os.Mkdir(e.Root, 0o700); err != nil {
		t.Fatal(err)
	}
	e.Out = filepath.Join(base, "outputs")
	return e
}

// At returns an Env rooted at dir, which must exist: session "test", dir the
// current and only working directory, its output directory dir/.outputs, no
// environment.
func At(dir string) *Env {
	return &Env{ID: "test", Root: dir, Dirs: []string{dir}, Out: filepath.Join(dir, ".outputs")}
}

// SessionID returns ID.
func (e *Env) SessionID() string { return e.ID }

// Cwd returns the current directory: Root, or the last SetCwd.
func (e *Env) Cwd() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cwd == "" {
		return e.Root
	}
	return e.cwd
}

// WorkingDirs returns a copy of Dirs.
func (e *Env) WorkingDirs() []string { return append([]string(nil), e.Dirs...) }

// Environ returns Vars.
func (e *Env) Environ() []string { return e.Vars }

// OutputDir returns Out.
func (e *Env) OutputDir() string { return e.Out }

// FileState returns the state last recorded for path.
func (e *Env) FileState(path string) (tool.FileState, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	st, ok := e.files[path]
	return st, ok
}

// Files returns a copy of every recorded file state, by path.
func (e *Env) Files() map[string]tool.FileState {
	e.mu.Lock()
	defer e.mu.Unlock()
	return maps.Clone(e.files)
}

// Todos returns the todo list last set, or nil.
func (e *Env) Todos() json.RawMessage {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.todos
}

// RecordFile records st under st.Path (tool.Mutator).
func (e *Env) RecordFile(st tool.FileState) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.files == nil {
		e.files = map[string]tool.FileState{}
	}
	e.files[st.Path] = st
}

// SetCwd moves the current directory (tool.Mutator).
func (e *Env) SetCwd(dir string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cwd = dir
}

// SetTodos replaces the todo list (tool.Mutator).
func (e *Env) SetTodos(todos json.RawMessage) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.todos = todos
}

// Apply applies res's Modifier, if any, as the pipeline does after a call.
// A nil res is ignored.
func (e *Env) Apply(res *tool.Result) {
	if res != nil && res.Modifier != nil {
		res.Modifier(e)
	}
}

// Path returns name joined to the current directory.
func (e *Env) Path(name string) string { return filepath.Join(e.Cwd(), name) }
