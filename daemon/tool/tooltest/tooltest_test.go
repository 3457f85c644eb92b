package tooltest_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/daemon/tool/tooltest"
)

func TestNew(t *testing.T) {
	e := tooltest.New(t)
	if fi, err := os.Stat(e.Root); err != nil || !fi.IsDir() {
		t.Fatalf("root %q: %v", e.Root, err)
	}
	if e.SessionID() != "test" || e.Cwd() != e.Root || len(e.WorkingDirs()) != 1 || e.WorkingDirs()[0] != e.Root {
		t.Errorf("id %q, cwd %q, dirs %q, root %q", e.SessionID(), e.Cwd(), e.WorkingDirs(), e.Root)
	}
	if filepath.Dir(e.OutputDir()) != filepath.Dir(e.Root) || e.Environ() != nil {
		t.Errorf("output dir %q, environ %q", e.OutputDir(), e.Environ())
	}
	if got := e.Path("a.txt"); got != filepath.Join(e.Root, "a.txt") {
		t.Errorf("Path = %q", got)
	}
}

func TestApply(t *testing.T) {
	e := tooltest.At(t.TempDir())
	st := tool.FileState{Path: e.Path("f"), Size: 3}
	sub := filepath.Join(e.Root, "sub")
	e.Apply(&tool.Result{Modifier: func(m tool.Mutator) {
		m.RecordFile(st)
		m.SetCwd(sub)
		m.SetTodos(json.RawMessage(`[]`))
	}})
	e.Apply(&tool.Result{}) // no Modifier
	e.Apply(nil)
	if got, ok := e.FileState(st.Path); !ok || got != st {
		t.Errorf("FileState = %v, %v", got, ok)
	}
	if e.Cwd() != sub || e.WorkingDirs()[0] != e.Root || string(e.Todos()) != "[]" {
		t.Errorf("cwd %q, dirs %q, todos %s", e.Cwd(), e.WorkingDirs(), e.Todos())
	}
	files := e.Files()
	delete(files, st.Path)
	if len(e.Files()) != 1 {
		t.Error("Files does not return a copy")
	}
}
