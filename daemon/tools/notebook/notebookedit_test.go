package notebook_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/daemon/tool/tooltest"
	"github.com/tackle-agent/tackle/daemon/tools/notebook"
)

// The fixtures are written as Jupyter writes a notebook: json.dumps(nb,
// sort_keys=True, indent=1, ensure_ascii=False) and a newline.
//   - testdata/analysis.ipynb: nbformat 4.5, cells with ids (intro, imports,
//     load with outputs, notes with an attachment, raw-1), extra metadata;
//   - testdata/legacy.ipynb: nbformat 4.4, three cells without ids.

type args = map[string]any

func tools() map[string]tool.Tool {
	m := map[string]tool.Tool{}
	for _, tl := range notebook.Tools(nil) {
		m[tl.Spec().Name] = tl
	}
	return m
}

// fixture copies testdata/name into a new session's root and returns the
// session and the notebook's path.
func fixture(t *testing.T, name string) (*tooltest.Env, string) {
	t.Helper()
	env := tooltest.New(t)
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	p := env.Path(name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return env, p
}

// markRead records p as read in full, as the Read tool records a file: by
// its real path, with its mtime, size and content hash.
func markRead(t *testing.T, env *tooltest.Env, p string) {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	env.RecordFile(tool.FileState{Path: tool.RealPath(p), ModTime: fi.ModTime(), Size: fi.Size(), Hash: hashOf(data)})
}

func hashOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func edit(t *testing.T, env *tooltest.Env, in args) tooltest.Outcome {
	t.Helper()
	return tooltest.Call(t.Context(), t, tools(), env, "NotebookEdit", in, nil)
}

func mustOK(t *testing.T, o tooltest.Outcome) tooltest.Outcome {
	t.Helper()
	if o.Failed() {
		t.Fatalf("call failed: %s", o.Text())
	}
	return o
}

func mustFail(t *testing.T, o tooltest.Outcome, want ...string) {
	t.Helper()
	if !o.Failed() {
		t.Fatalf("call succeeded, want an error containing %q; got %q", want, o.Text())
	}
	for _, w := range want {
		if !strings.Contains(o.Text(), w) {
			t.Fatalf("error %q does not contain %q", o.Text(), w)
		}
	}
}

func readBytes(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// nb is a notebook decoded for checks (numbers kept as written).
type nb struct {
	Cells         []map[string]any `json:"cells"`
	Metadata      map[string]any   `json:"metadata"`
	NBFormat      json.Number      `json:"nbformat"`
	NBFormatMinor json.Number      `json:"nbformat_minor"`
}

func decodeNB(t *testing.T, data []byte) nb {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var n nb
	if err := dec.Decode(&n); err != nil {
		t.Fatalf("decoding notebook: %v\n%s", err, data)
	}
	return n
}

func (n nb) ids() []string {
	var ids []string
	for _, c := range n.Cells {
		id, _ := c["id"].(string)
		ids = append(ids, id)
	}
	return ids
}

func (n nb) cell(t *testing.T, id string) map[string]any {
	t.Helper()
	for _, c := range n.Cells {
		if c["id"] == id {
			return c
		}
	}
	t.Fatalf("no cell %q in %v", id, n.ids())
	return nil
}

// source joins a cell's source (a list of lines in these fixtures).
func source(t *testing.T, c map[string]any) string {
	t.Helper()
	lines, ok := c["source"].([]any)
	if !ok {
		t.Fatalf("source is %T, want a list of lines as Jupyter writes it", c["source"])
	}
	var sb strings.Builder
	for _, l := range lines {
		sb.WriteString(l.(string))
	}
	return sb.String()
}

// jupyterForm re-encodes a notebook the way Jupyter writes one (keys
// sorted, indent 1, nothing escaped that need not be, a final newline).
func jupyterForm(t *testing.T, data []byte) []byte {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// rawParts returns the bytes of each cell, and of the metadata, as written
// in data.
func rawParts(t *testing.T, data []byte) (cells []json.RawMessage, metadata json.RawMessage) {
	t.Helper()
	var top struct {
		Cells    []json.RawMessage `json:"cells"`
		Metadata json.RawMessage   `json:"metadata"`
	}
	if err := json.Unmarshal(data, &top); err != nil {
		t.Fatal(err)
	}
	return top.Cells, top.Metadata
}

// checkKept checks that the edited notebook keeps, byte for byte, the
// metadata and every cell of the original but those at the indices in
// changed, in the same order, and that it is still in Jupyter's format.
func checkKept(t *testing.T, orig, got []byte, changed ...int) {
	t.Helper()
	if !bytes.Equal(jupyterForm(t, got), got) {
		t.Errorf("the edited notebook is not in Jupyter's format (sorted keys, indent 1, final newline):\n%s", got)
	}
	oc, om := rawParts(t, orig)
	_, gm := rawParts(t, got)
	if !bytes.Equal(om, gm) {
		t.Errorf("metadata changed:\n%s\nwant\n%s", gm, om)
	}
	at := 0
	for i, c := range oc {
		if slices.Contains(changed, i) {
			continue
		}
		j := bytes.Index(got[at:], c)
		if j < 0 {
			t.Errorf("cell %d is not kept as it was (or not in order):\n%s", i, c)
			continue
		}
		at += j + len(c)
	}
	if o, g := decodeNB(t, orig), decodeNB(t, got); o.NBFormat != g.NBFormat || o.NBFormatMinor != g.NBFormatMinor {
		t.Errorf("nbformat changed from %s.%s to %s.%s", o.NBFormat, o.NBFormatMinor, g.NBFormat, g.NBFormatMinor)
	}
}

func TestReplaceCodeCell(t *testing.T) {
	env, p := fixture(t, "analysis.ipynb")
	orig := readBytes(t, p)
	markRead(t, env, p)
	src := "df = pd.read_csv(\"sales.csv\")\ndf.head()\n"
	o := mustOK(t, edit(t, env, args{"notebook_path": p, "cell_id": "load", "new_source": src}))
	if want := "Updated cell load with " + src; o.Text() != want {
		t.Errorf("result %q, want %q", o.Text(), want)
	}
	got := readBytes(t, p)
	checkKept(t, orig, got, 2)
	c := decodeNB(t, got).cell(t, "load")
	if s := source(t, c); s != src {
		t.Errorf("source %q, want %q", s, src)
	}
	if lines := c["source"].([]any); len(lines) != 2 || lines[1] != "df.head()\n" {
		t.Errorf("source lines %q, want two lines each ending in a newline", lines)
	}
	if outs, ok := c["outputs"].([]any); !ok || len(outs) != 0 {
		t.Errorf("outputs %v, want cleared to []", c["outputs"])
	}
	if ec, ok := c["execution_count"]; !ok || ec != nil {
		t.Errorf("execution_count %v (present %v), want null", ec, ok)
	}
	if c["cell_type"] != "code" || !reflect.DeepEqual(c["metadata"], map[string]any{"collapsed": false, "scrolled": true}) {
		t.Errorf("cell type or metadata changed: %v", c)
	}
	for _, w := range []string{"--- " + p + "\n+++ " + p + "\n", "code cell load, outputs cleared", " df = pd.read_csv", "-print(\"rows:\", len(df))\n", "+df.head()\n"} {
		if !strings.Contains(o.Res.Display, w) {
			t.Errorf("display lacks %q:\n%s", w, o.Res.Display)
		}
	}
	if o.Res.Display[:4] != "--- " {
		t.Errorf("display is not a unified diff:\n%s", o.Res.Display)
	}
}

func TestReplaceMarkdownKeepsAttachments(t *testing.T) {
	env, p := fixture(t, "analysis.ipynb")
	orig := readBytes(t, p)
	markRead(t, env, p)
	mustOK(t, edit(t, env, args{"notebook_path": p, "cell_id": "notes", "new_source": "## Notes\n\n![chart](attachment:chart.png)", "edit_mode": "replace"}))
	got := readBytes(t, p)
	checkKept(t, orig, got, 3)
	c := decodeNB(t, got).cell(t, "notes")
	if _, ok := c["attachments"]; !ok {
		t.Error("the markdown cell lost its attachments")
	}
	for _, k := range []string{"outputs", "execution_count"} {
		if _, ok := c[k]; ok {
			t.Errorf("the markdown cell got %q", k)
		}
	}
}

func TestCellTypeChange(t *testing.T) {
	env, p := fixture(t, "analysis.ipynb")
	orig := readBytes(t, p)
	markRead(t, env, p)

	o := mustOK(t, edit(t, env, args{"notebook_path": p, "cell_id": "load", "new_source": "Loading is done in **pandas**.", "cell_type": "markdown"}))
	if !strings.Contains(o.Res.Display, "code cell load (now markdown), outputs cleared") {
		t.Errorf("display:\n%s", o.Res.Display)
	}
	// The state recorded by the edit allows the next one without a Read.
	mustOK(t, edit(t, env, args{"notebook_path": p, "cell_id": "notes", "new_source": "print('notes')", "cell_type": "code"}))

	got := readBytes(t, p)
	checkKept(t, orig, got, 2, 3)
	n := decodeNB(t, got)
	md := n.cell(t, "load")
	if md["cell_type"] != "markdown" || source(t, md) != "Loading is done in **pandas**." {
		t.Errorf("cell load: %v", md)
	}
	for _, k := range []string{"outputs", "execution_count"} {
		if _, ok := md[k]; ok {
			t.Errorf("cell load, now markdown, still has %q", k)
		}
	}
	code := n.cell(t, "notes")
	if code["cell_type"] != "code" || source(t, code) != "print('notes')" {
		t.Errorf("cell notes: %v", code)
	}
	if _, ok := code["attachments"]; ok {
		t.Error("cell notes, now code, still has attachments (nbformat allows them in markdown cells only)")
	}
	if outs, ok := code["outputs"].([]any); !ok || len(outs) != 0 {
		t.Errorf("cell notes, now code: outputs %v, want []", code["outputs"])
	}
	if ec, ok := code["execution_count"]; !ok || ec != nil {
		t.Errorf("cell notes, now code: execution_count %v (present %v), want null", ec, ok)
	}
	wantKeys := []string{"cell_type", "execution_count", "id", "metadata", "outputs", "source"}
	if keys := keysOf(code); !slices.Equal(keys, wantKeys) {
		t.Errorf("cell notes keys %v, want %v", keys, wantKeys)
	}
}

func keysOf(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

var newID = regexp.MustCompile(`^Inserted cell ([0-9a-f]{8}) with `)

func TestInsert(t *testing.T) {
	env, p := fixture(t, "analysis.ipynb")
	orig := readBytes(t, p)
	markRead(t, env, p)

	o := mustOK(t, edit(t, env, args{"notebook_path": p, "cell_id": "imports", "new_source": "## Loading\nThe data comes from `sales.csv`.", "cell_type": "markdown", "edit_mode": "insert"}))
	m := newID.FindStringSubmatch(o.Text())
	if m == nil {
		t.Fatalf("result %q does not name a new nbformat cell id", o.Text())
	}
	mdID := m[1]
	if !strings.Contains(o.Res.Display, "@@ -0,0 +1,2 @@ new markdown cell "+mdID+" at index 2\n+## Loading\n+The data comes from `sales.csv`.\n") {
		t.Errorf("display:\n%s", o.Res.Display)
	}

	o = mustOK(t, edit(t, env, args{"notebook_path": p, "new_source": "%matplotlib inline", "cell_type": "code", "edit_mode": "insert"}))
	m = newID.FindStringSubmatch(o.Text())
	if m == nil {
		t.Fatalf("result %q does not name a new cell id", o.Text())
	}
	codeID := m[1]

	got := readBytes(t, p)
	checkKept(t, orig, got)
	n := decodeNB(t, got)
	if want := []string{codeID, "intro", "imports", mdID, "load", "notes", "raw-1"}; !slices.Equal(n.ids(), want) {
		t.Fatalf("cells %v, want %v", n.ids(), want)
	}
	md := n.cell(t, mdID)
	if !reflect.DeepEqual(md, map[string]any{"cell_type": "markdown", "id": mdID, "metadata": map[string]any{},
		"source": []any{"## Loading\n", "The data comes from `sales.csv`."}}) {
		t.Errorf("new markdown cell %v", md)
	}
	code := n.cell(t, codeID)
	if !reflect.DeepEqual(code, map[string]any{"cell_type": "code", "id": codeID, "metadata": map[string]any{},
		"execution_count": nil, "outputs": []any{}, "source": []any{"%matplotlib inline"}}) {
		t.Errorf("new code cell %v", code)
	}
	// The new cell is addressable by its id at once.
	mustOK(t, edit(t, env, args{"notebook_path": p, "cell_id": codeID, "new_source": "%matplotlib widget"}))
}

func TestDelete(t *testing.T) {
	env, p := fixture(t, "analysis.ipynb")
	orig := readBytes(t, p)
	markRead(t, env, p)
	tl := tools()["NotebookEdit"]
	if !tl.Attributes(json.RawMessage(`{"notebook_path":"/x.ipynb","new_source":"","cell_id":"a","edit_mode":"delete"}`)).Destructive {
		t.Error("a delete is not marked destructive")
	}
	if a := tl.Attributes(json.RawMessage(`{"notebook_path":"/x.ipynb","new_source":"","cell_id":"a"}`)); a.Destructive || a.ReadOnly || a.ConcurrencySafe {
		t.Errorf("replace attributes %+v, want not destructive, not read-only, not concurrency-safe", a)
	}

	o := mustOK(t, edit(t, env, args{"notebook_path": p, "cell_id": "load", "new_source": "", "edit_mode": "delete"}))
	if o.Text() != "Deleted cell load" {
		t.Errorf("result %q", o.Text())
	}
	if !strings.Contains(o.Res.Display, "@@ -1,4 +0,0 @@ deleted code cell load\n-df = pd.read_csv") {
		t.Errorf("display:\n%s", o.Res.Display)
	}
	got := readBytes(t, p)
	checkKept(t, orig, got, 2)
	if want := []string{"intro", "imports", "notes", "raw-1"}; !slices.Equal(decodeNB(t, got).ids(), want) {
		t.Errorf("cells %v, want %v", decodeNB(t, got).ids(), want)
	}
	mustFail(t, edit(t, env, args{"notebook_path": p, "cell_id": "load", "new_source": "", "edit_mode": "delete"}),
		`Cell with ID "load" not found in notebook.`)
}

func TestCellIndexIDs(t *testing.T) {
	env, p := fixture(t, "legacy.ipynb")
	orig := readBytes(t, p)
	markRead(t, env, p)

	o := mustOK(t, edit(t, env, args{"notebook_path": p, "cell_id": "cell-1", "new_source": "x = 6 * 7"}))
	if o.Text() != "Updated cell cell-1 with x = 6 * 7" {
		t.Errorf("result %q", o.Text())
	}
	got := readBytes(t, p)
	checkKept(t, orig, got, 1)
	c := decodeNB(t, got).Cells[1]
	if source(t, c) != "x = 6 * 7" || len(c["outputs"].([]any)) != 0 || c["execution_count"] != nil {
		t.Errorf("cell-1 after replace: %v", c)
	}
	if _, ok := c["id"]; ok {
		t.Error("a cell of an nbformat 4.4 notebook got an id")
	}

	o = mustOK(t, edit(t, env, args{"notebook_path": p, "cell_id": "cell-0", "new_source": "Setup.", "cell_type": "markdown", "edit_mode": "insert"}))
	if !strings.HasPrefix(o.Text(), "Inserted cell cell-1 with Setup.") || !strings.Contains(o.Text(), "numbered one higher") {
		t.Errorf("result %q", o.Text())
	}
	n := decodeNB(t, readBytes(t, p))
	if len(n.Cells) != 4 || source(t, n.Cells[1]) != "Setup." || source(t, n.Cells[2]) != "x = 6 * 7" {
		t.Fatalf("cells after insert: %v", n.Cells)
	}
	if _, ok := n.Cells[1]["id"]; ok {
		t.Error("a new cell of an nbformat 4.4 notebook got an id")
	}

	o = mustOK(t, edit(t, env, args{"notebook_path": p, "cell_id": "cell-3", "new_source": "", "edit_mode": "delete"}))
	if !strings.HasPrefix(o.Text(), "Deleted cell cell-3") {
		t.Errorf("result %q", o.Text())
	}
	if n := decodeNB(t, readBytes(t, p)); len(n.Cells) != 3 || n.NBFormatMinor != "4" {
		t.Errorf("after delete: %d cells, nbformat_minor %s", len(n.Cells), n.NBFormatMinor)
	}
	mustFail(t, edit(t, env, args{"notebook_path": p, "cell_id": "cell-3", "new_source": "x"}),
		"Cell with index 3 does not exist in notebook.", "cell-0 to cell-2")
	mustFail(t, edit(t, env, args{"notebook_path": p, "cell_id": "intro", "new_source": "x"}),
		`Cell with ID "intro" not found in notebook.`, "have no ids")

	// cell-N also names a cell of a notebook with ids, by index.
	env, p = fixture(t, "analysis.ipynb")
	markRead(t, env, p)
	mustOK(t, edit(t, env, args{"notebook_path": p, "cell_id": "cell-4", "new_source": "raw text"}))
	if c := decodeNB(t, readBytes(t, p)).cell(t, "raw-1"); source(t, c) != "raw text" || c["cell_type"] != "raw" {
		t.Errorf("cell-4 (raw-1): %v", c)
	}
}

func TestReadBeforeEdit(t *testing.T) {
	env, p := fixture(t, "analysis.ipynb")
	orig := readBytes(t, p)
	mustFail(t, edit(t, env, args{"notebook_path": p, "cell_id": "intro", "new_source": "# Title"}),
		"File has not been read yet. Read it first before writing to it.")
	if !bytes.Equal(readBytes(t, p), orig) {
		t.Error("the notebook changed")
	}
	// A read of another file does not count.
	other := env.Path("other.ipynb")
	if err := os.WriteFile(other, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	markRead(t, env, other)
	mustFail(t, edit(t, env, args{"notebook_path": p, "cell_id": "intro", "new_source": "# Title"}), "File has not been read yet.")
}

func TestStaleFile(t *testing.T) {
	env, p := fixture(t, "analysis.ipynb")
	markRead(t, env, p)
	// Jupyter saves the notebook after the read.
	changed := bytes.Replace(readBytes(t, p), []byte(`"execution_count": 1`), []byte(`"execution_count": 7`), 1)
	if err := os.WriteFile(p, changed, 0o644); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(2 * time.Second)
	if err := os.Chtimes(p, future, future); err != nil {
		t.Fatal(err)
	}
	mustFail(t, edit(t, env, args{"notebook_path": p, "cell_id": "intro", "new_source": "# Title"}),
		"File has been modified since read, either by the user or by a linter. Read it again before attempting to write it.")
	if !bytes.Equal(readBytes(t, p), changed) {
		t.Error("the notebook changed")
	}

	// A touch alone (same content, new mtime) is no change.
	markRead(t, env, p)
	later := future.Add(2 * time.Second)
	if err := os.Chtimes(p, later, later); err != nil {
		t.Fatal(err)
	}
	mustOK(t, edit(t, env, args{"notebook_path": p, "cell_id": "intro", "new_source": "# Title"}))
}

// TestChangedWhileWaiting: the notebook changes between Validate and Run
// (while the call waits for permission): Run refuses.
func TestChangedWhileWaiting(t *testing.T) {
	env, p := fixture(t, "analysis.ipynb")
	markRead(t, env, p)
	tl := tools()["NotebookEdit"]
	c := &tool.Call{ID: "c1", Name: "NotebookEdit", Env: env,
		Input: json.RawMessage(`{"notebook_path":` + strconvQuote(p) + `,"cell_id":"intro","new_source":"x"}`)}
	if err := tl.Validate(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, append(readBytes(t, p), ' '), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := tl.Run(t.Context(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(res.Content[0].Text, "has been modified since read") {
		t.Errorf("Run after a change: %+v", res)
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestErrors(t *testing.T) {
	env, p := fixture(t, "analysis.ipynb")
	markRead(t, env, p)
	dir := env.Root

	write := func(name, content string) string {
		q := filepath.Join(dir, name)
		if err := os.WriteFile(q, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		markRead(t, env, q)
		return q
	}
	notJSON := write("broken.ipynb", `{"cells": [`)
	v3 := write("old.ipynb", `{"nbformat": 3, "nbformat_minor": 0, "worksheets": [{"cells": []}], "metadata": {}}`)
	noCells := write("nocells.ipynb", `{"metadata": {}, "nbformat": 4, "nbformat_minor": 5}`)
	text := write("notes.txt", "hello\n")
	if err := os.Mkdir(filepath.Join(dir, "dir.ipynb"), 0o755); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name   string
		in     args
		schema bool // refused by the input schema
		want   []string
	}{
		{"missing cell", args{"notebook_path": p, "cell_id": "nope", "new_source": "x"}, false,
			[]string{`Cell with ID "nope" not found in notebook.`, `"intro", "imports", "load", "notes", "raw-1"`}},
		{"no cell id", args{"notebook_path": p, "new_source": "x"}, false,
			[]string{"Cell ID must be specified when not inserting a new cell."}},
		{"no cell id for delete", args{"notebook_path": p, "new_source": "", "edit_mode": "delete"}, false,
			[]string{"Cell ID must be specified when not inserting a new cell."}},
		{"insert without type", args{"notebook_path": p, "cell_id": "intro", "new_source": "x", "edit_mode": "insert"}, false,
			[]string{"Cell type is required when using edit_mode=insert."}},
		{"index out of range", args{"notebook_path": p, "cell_id": "cell-5", "new_source": "x"}, false,
			[]string{"Cell with index 5 does not exist in notebook."}},
		{"not a notebook", args{"notebook_path": text, "cell_id": "cell-0", "new_source": "x"}, false,
			[]string{"File must be a Jupyter notebook (.ipynb file). For editing other file types, use the Edit tool."}},
		{"relative path", args{"notebook_path": "analysis.ipynb", "cell_id": "intro", "new_source": "x"}, false,
			[]string{"notebook_path must be an absolute path", filepath.Join(dir, "analysis.ipynb")}},
		{"missing file", args{"notebook_path": filepath.Join(dir, "missing.ipynb"), "cell_id": "intro", "new_source": "x"}, false,
			[]string{"Notebook file does not exist.", "use Write"}},
		{"directory", args{"notebook_path": filepath.Join(dir, "dir.ipynb"), "cell_id": "intro", "new_source": "x"}, false,
			[]string{"is a directory"}},
		{"invalid JSON", args{"notebook_path": notJSON, "cell_id": "intro", "new_source": "x"}, false,
			[]string{"Notebook is not valid JSON."}},
		{"nbformat 3", args{"notebook_path": v3, "cell_id": "cell-0", "new_source": "x"}, false,
			[]string{"nbformat 3 notebook", "jupyter nbconvert"}},
		{"no cells", args{"notebook_path": noCells, "new_source": "x", "cell_type": "code", "edit_mode": "insert"}, false,
			[]string{`has no "cells" list`}},
		{"raw cell type", args{"notebook_path": p, "cell_id": "intro", "new_source": "x", "cell_type": "raw"}, true, nil},
		{"unknown mode", args{"notebook_path": p, "cell_id": "intro", "new_source": "x", "edit_mode": "append"}, true, nil},
		{"no new_source", args{"notebook_path": p, "cell_id": "intro"}, true, nil},
		{"unknown field", args{"notebook_path": p, "cell_id": "intro", "new_source": "x", "cell_number": 0}, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := readBytes(t, p)
			o := edit(t, env, tc.in)
			if tc.schema {
				if o.SchemaErr == nil {
					t.Fatalf("the schema accepted %v: %s", tc.in, o.Text())
				}
				return
			}
			if o.SchemaErr != nil {
				t.Fatalf("schema error: %v", o.SchemaErr)
			}
			mustFail(t, o, tc.want...)
			if !bytes.Equal(readBytes(t, p), before) {
				t.Error("the notebook changed")
			}
		})
	}
}

func TestPermission(t *testing.T) {
	env, p := fixture(t, "analysis.ipynb")
	tl := tools()["NotebookEdit"]
	check := func(path string) tool.Access {
		t.Helper()
		c := &tool.Call{Name: "NotebookEdit", Env: env, Input: json.RawMessage(`{"notebook_path":` + strconvQuote(path) + `,"cell_id":"intro","new_source":"x"}`)}
		a, err := tl.CheckPermission(t.Context(), c)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	a := check(p)
	if a.Kind != tool.AccessEdit || !slices.Equal(a.Paths, []string{p}) || !slices.Equal(a.Writes, []string{p}) || !a.InsideWorkingDirs || a.AlwaysAsk != "" {
		t.Errorf("access %+v, want an edit of %s inside the working directories", a, p)
	}

	// A link inside the working directory to a notebook outside it is an
	// edit of the target, outside.
	outside := filepath.Join(filepath.Dir(env.Root), "outside.ipynb")
	if err := os.WriteFile(outside, readBytes(t, p), 0o644); err != nil {
		t.Fatal(err)
	}
	link := env.Path("link.ipynb")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	if a := check(link); !slices.Equal(a.Writes, []string{outside}) || a.InsideWorkingDirs {
		t.Errorf("access through a link %+v, want an edit of %s outside the working directories", a, outside)
	}

	// A protected path is always asked.
	if err := os.MkdirAll(env.Path(".vscode"), 0o755); err != nil {
		t.Fatal(err)
	}
	if a := check(env.Path(".vscode/scratch.ipynb")); a.AlwaysAsk == "" {
		t.Errorf("access to a protected path %+v, want AlwaysAsk", a)
	}
}

func TestKeepsModeAndLink(t *testing.T) {
	env, p := fixture(t, "analysis.ipynb")
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	link := env.Path("link.ipynb")
	if err := os.Symlink(p, link); err != nil {
		t.Fatal(err)
	}
	markRead(t, env, link) // recorded by the real path, as Read does
	mustOK(t, edit(t, env, args{"notebook_path": link, "cell_id": "intro", "new_source": "# Title"}))
	fi, err := os.Lstat(link)
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v %v", fi, err)
	}
	fi, err = os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	if c := decodeNB(t, readBytes(t, p)).cell(t, "intro"); source(t, c) != "# Title" {
		t.Errorf("intro: %v", c)
	}
	st, ok := env.FileState(p)
	if !ok || st.Partial || st.Size != fi.Size() || !st.ModTime.Equal(fi.ModTime()) || st.Hash != hashOf(readBytes(t, p)) {
		t.Errorf("recorded state %+v (%v), want the new file's", st, ok)
	}
	entries, _ := os.ReadDir(env.Root)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

// TestOtherLayouts: a notebook not written by Jupyter (keys unsorted,
// indent 2, CRLF, sources as strings) keeps its layout and its other cells
// byte for byte.
func TestOtherLayouts(t *testing.T) {
	env := tooltest.New(t)
	p := env.Path("vscode.ipynb")
	orig := `{
  "nbformat": 4,
  "nbformat_minor": 5,
  "cells": [
    {
      "id": "a",
      "cell_type": "code",
      "source": "print(1)\nprint(2)",
      "metadata": {"z": 1, "a": 2},
      "outputs": [{"output_type": "stream", "name": "stdout", "text": "1\n2\n"}],
      "execution_count": 4
    },
    {
      "id": "b",
      "cell_type": "markdown",
      "source": "caf\u00e9 1.50",
      "metadata": {}
    }
  ],
  "metadata": {"ratio": 1.50, "x": 1e-5}
}`
	// Normalise the inner one-line objects to the file's layout first: the
	// layout is taken from the file, one style for the whole of it.
	orig = string(reformat(t, []byte(orig)))
	if err := os.WriteFile(p, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	markRead(t, env, p)
	mustOK(t, edit(t, env, args{"notebook_path": p, "cell_id": "a", "new_source": "print(3)\n"}))
	got := string(readBytes(t, p))
	cells, meta := rawParts(t, []byte(orig))
	if !strings.Contains(got, string(cells[1])) || !strings.Contains(got, string(meta)) {
		t.Errorf("other cell or metadata not kept:\n%s", got)
	}
	if !strings.HasPrefix(got, "{\r\n  \"nbformat\": 4,\r\n  \"nbformat_minor\": 5,\r\n  \"cells\": [\r\n    {\r\n      \"id\": \"a\",\r\n      \"cell_type\": \"code\",\r\n      \"source\": \"print(3)\\n\",\r\n") {
		t.Errorf("layout not kept:\n%s", got)
	}
	if !strings.Contains(got, "\"outputs\": [],\r\n      \"execution_count\": null\r\n    },") {
		t.Errorf("outputs not cleared in place:\n%s", got)
	}
	if strings.Contains(strings.ReplaceAll(got, "\r\n", ""), "\n") || strings.HasSuffix(got, "\n") {
		t.Errorf("line endings not kept (or a final newline added):\n%q", got)
	}
}

// reformat lays data out with indent 2 and CRLF, keeping key order and
// literals (json.Indent does both).
func reformat(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := json.Indent(&b, data, "", "  "); err != nil {
		t.Fatal(err)
	}
	return bytes.ReplaceAll(b.Bytes(), []byte("\n"), []byte("\r\n"))
}

func TestNoChange(t *testing.T) {
	env, p := fixture(t, "analysis.ipynb")
	markRead(t, env, p)
	before, _ := os.Stat(p)
	o := mustOK(t, edit(t, env, args{"notebook_path": p, "cell_id": "intro", "new_source": "# Sales analysis\n\nMonthly totals for the café <b>&</b> shop."}))
	after, _ := os.Stat(p)
	if !after.ModTime().Equal(before.ModTime()) {
		t.Error("an edit that changes nothing rewrote the file")
	}
	if !strings.Contains(o.Res.Display, "source unchanged") {
		t.Errorf("display:\n%s", o.Res.Display)
	}
}
