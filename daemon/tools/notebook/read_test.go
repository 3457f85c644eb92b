package notebook_test

// These tests run the real Read tool of daemon/tools/fs before NotebookEdit,
// to check that what Read records for a notebook is what NotebookEdit
// accepts. Only the test imports fs: the package itself imports no other
// tool family.

import (
	"os"
	"strings"
	"testing"

	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/daemon/tool/tooltest"
	"github.com/tackle-agent/tackle/daemon/tools/fs"
)

func withRead() map[string]tool.Tool {
	m := tools()
	for _, tl := range fs.Tools(nil) {
		if tl.Spec().Name == "Read" {
			m["Read"] = tl
		}
	}
	return m
}

func TestReadThenEdit(t *testing.T) {
	env, p := fixture(t, "analysis.ipynb")
	m := withRead()
	call := func(name string, in args) tooltest.Outcome {
		t.Helper()
		return tooltest.Call(t.Context(), t, m, env, name, in, nil)
	}
	mustFail(t, call("NotebookEdit", args{"notebook_path": p, "cell_id": "intro", "new_source": "# Title"}), "File has not been read yet.")
	mustOK(t, call("Read", args{"file_path": p}))
	mustOK(t, call("NotebookEdit", args{"notebook_path": p, "cell_id": "intro", "new_source": "# Title"}))
	// The state NotebookEdit recorded lets a second edit go without a new Read.
	mustOK(t, call("NotebookEdit", args{"notebook_path": p, "cell_id": "intro", "new_source": "# Title 2"}))
	if !strings.Contains(string(readBytes(t, p)), `"# Title 2"`) {
		t.Error("the edits did not land")
	}
}

// TestPartialReadThenEdit: a notebook with large outputs is often over
// Read's cap, so Read records a partial view; as for Edit, that is enough.
func TestPartialReadThenEdit(t *testing.T) {
	env, p := fixture(t, "analysis.ipynb")
	m := withRead()
	mustOK(t, tooltest.Call(t.Context(), t, m, env, "Read", args{"file_path": p, "limit": 10}, nil))
	st, ok := env.FileState(tool.RealPath(p))
	if !ok || !st.Partial {
		t.Fatalf("Read recorded %+v (%v), want a partial read", st, ok)
	}
	mustOK(t, tooltest.Call(t.Context(), t, m, env, "NotebookEdit", args{"notebook_path": p, "cell_id": "load", "new_source": "df = None"}, nil))

	// A change after the read is refused, whichever tool read the file.
	env, p = fixture(t, "analysis.ipynb")
	mustOK(t, tooltest.Call(t.Context(), t, m, env, "Read", args{"file_path": p}, nil))
	if err := os.WriteFile(p, append(readBytes(t, p), '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	mustFail(t, tooltest.Call(t.Context(), t, m, env, "NotebookEdit", args{"notebook_path": p, "cell_id": "load", "new_source": "df = None"}, nil),
		"File has been modified since read")
}
