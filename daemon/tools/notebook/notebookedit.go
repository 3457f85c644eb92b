package notebook

import (
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tackle-agent/tackle/daemon/tool"
)

//go:embed notebookedit.md
var description string

// The schema is Claude Code's: new_source is required even for a delete.
var schema = json.RawMessage(`{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "notebook_path": {"type": "string", "description": "The absolute path to the Jupyter notebook file to edit (must be absolute, not relative)"},
    "cell_id": {"type": "string", "description": "The ID of the cell to edit. When inserting a new cell, the new cell will be inserted after the cell with this ID, or at the beginning if not specified."},
    "new_source": {"type": "string", "description": "The new source for the cell"},
    "cell_type": {"type": "string", "enum": ["code", "markdown"], "description": "The type of the cell (code or markdown). If not specified, it defaults to the current cell type. If using edit_mode=insert, this is required."},
    "edit_mode": {"type": "string", "enum": ["replace", "insert", "delete"], "description": "The type of edit to make (replace, insert, delete). Defaults to replace."}
  },
  "required": ["notebook_path", "new_source"],
  "additionalProperties": false
}`)

// Edit modes.
const (
	modeReplace = "replace"
	modeInsert  = "insert"
	modeDelete  = "delete"
)

// NotebookEdit is the NotebookEdit tool: it replaces the source of one cell
// of a notebook read before, inserts a cell, or deletes one.
type NotebookEdit struct{ opts *Options }

type input struct {
	NotebookPath string `json:"notebook_path"`
	CellID       string `json:"cell_id"`
	NewSource    string `json:"new_source"`
	CellType     string `json:"cell_type"`
	EditMode     string `json:"edit_mode"`
}

func (in input) mode() string {
	if in.EditMode == "" {
		return modeReplace
	}
	return in.EditMode
}

// Spec implements tool.Tool.
func (t *NotebookEdit) Spec() tool.Spec {
	return tool.Spec{Name: "NotebookEdit", Description: description, InputSchema: schema}
}

// editMaxResultChars is the pipeline's persistence threshold: the result
// echoes new_source, as Claude Code's does.
const editMaxResultChars = 100000

// Attributes implements tool.Tool. A delete is destructive.
func (t *NotebookEdit) Attributes(raw json.RawMessage) tool.Attributes {
	var in input
	destructive := json.Unmarshal(raw, &in) == nil && in.EditMode == modeDelete
	return tool.Attributes{Destructive: destructive, Origin: tool.OriginBuiltin, MaxResultChars: editMaxResultChars}
}

// Validate implements tool.Tool: the input's own rules, the read-state
// rules, a valid nbformat 4 notebook, and the cell exists.
func (t *NotebookEdit) Validate(ctx context.Context, call *tool.Call) error {
	_, err := t.plan(ctx, call)
	return err
}

// CheckPermission implements tool.Tool: an edit of the notebook's real path.
func (t *NotebookEdit) CheckPermission(ctx context.Context, call *tool.Call) (tool.Access, error) {
	in, err := decodeCall(call)
	if err != nil {
		return tool.Access{}, err
	}
	p, err := absPath(call.Env, in.NotebookPath)
	if err != nil {
		return tool.Access{}, err
	}
	return access(call.Env, p), nil
}

// Run implements tool.Tool. It repeats the checks of Validate: the notebook
// may have changed while the call waited for permission.
func (t *NotebookEdit) Run(ctx context.Context, call *tool.Call, _ tool.Progress) (*tool.Result, error) {
	e, err := t.plan(ctx, call)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		return tool.ErrorResult(err.Error()), nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var mod tool.Modifier
	if bytes.Equal(e.file.data, e.data) {
		st := tool.FileState{Path: e.file.target, ModTime: e.file.info.ModTime(), Size: e.file.info.Size(), Hash: hashBytes(e.data)}
		mod = func(m tool.Mutator) { m.RecordFile(st) }
	} else if mod, err = e.file.save(e.data); err != nil {
		return tool.ErrorResult(err.Error() + ". Nothing was changed."), nil
	}
	return &tool.Result{
		Content:  []tool.Content{tool.Text(e.resultText())},
		Display:  e.display(t.opts.MaxDisplayBytes),
		Modifier: mod,
	}, nil
}

// edit is one planned change of a notebook.
type edit struct {
	file    *file
	data    []byte // the notebook's new content
	mode    string
	cellID  string // the cell as reported: the id given, or the new cell's
	index   int    // the cell's index (after the edit, for an insert)
	oldType string // the cell's type before (replace, delete)
	newType string // the cell's type after (replace, insert)
	oldSrc  string // the cell's source before (replace, delete)
	newSrc  string // the cell's source after (replace, insert)
	cleared bool   // a code cell's outputs or execution count were cleared
	noIDs   bool   // the notebook's cells have no ids (cell-N addressing)
}

// plan checks the call and computes the notebook's new content.
func (t *NotebookEdit) plan(ctx context.Context, call *tool.Call) (*edit, error) {
	in, err := decodeCall(call)
	if err != nil {
		return nil, err
	}
	p, err := absPath(call.Env, in.NotebookPath)
	if err != nil {
		return nil, err
	}
	if !strings.EqualFold(filepath.Ext(p), ".ipynb") {
		return nil, errors.New("File must be a Jupyter notebook (.ipynb file). For editing other file types, use the Edit tool.")
	}
	mode := in.mode()
	switch {
	case mode != modeReplace && mode != modeInsert && mode != modeDelete:
		return nil, errors.New("Edit mode must be replace, insert, or delete.")
	case mode == modeInsert && in.CellType == "":
		return nil, errors.New("Cell type is required when using edit_mode=insert.")
	case in.CellType != "" && in.CellType != "code" && in.CellType != "markdown":
		return nil, fmt.Errorf("cell_type must be code or markdown, not %q.", in.CellType)
	case mode != modeInsert && in.CellID == "":
		return nil, errors.New("Cell ID must be specified when not inserting a new cell.")
	}
	f, err := t.opts.load(ctx, call.Env, p)
	if err != nil {
		return nil, err
	}
	nb, err := parseNotebook(p, f.data)
	if err != nil {
		return nil, err
	}
	e := &edit{file: f, mode: mode, cellID: in.CellID, noIDs: !nb.ids}
	i := -1
	if in.CellID != "" {
		if i, err = nb.find(in.CellID); err != nil {
			return nil, err
		}
	}
	switch mode {
	case modeReplace:
		nb.replace(e, i, in)
	case modeInsert:
		nb.insert(e, i+1, in)
	case modeDelete:
		nb.delete(e, i)
	}
	e.data = encode(nb.root, nb.style)
	return e, nil
}

// notebook is a parsed nbformat 4 notebook.
type notebook struct {
	root  *value // the top-level object
	cells *value // its "cells" array; every element is an object
	ids   bool   // nbformat 4.5 or later: cells have ids
	style style  // the file's JSON layout
}

// parseNotebook parses the notebook at p.
func parseNotebook(p string, data []byte) (*notebook, error) {
	if !json.Valid(data) {
		var x any
		err := json.Unmarshal(data, &x)
		return nil, fmt.Errorf("Notebook is not valid JSON. (%s: %v) Fix the file, or restore it (for example from git), then Read it again", p, err)
	}
	root := parseTree(data)
	if root.kind != kindObject {
		return nil, fmt.Errorf("Notebook is not valid: %s is JSON but not an object, so not a Jupyter notebook", p)
	}
	major, hasMajor := root.get("nbformat").number()
	minor, _ := root.get("nbformat_minor").number()
	if hasMajor && major < 4 {
		return nil, fmt.Errorf("%s is an nbformat %d notebook; NotebookEdit edits nbformat 4 notebooks. Convert it first (Bash: `jupyter nbconvert --to notebook --inplace %s`), then Read it again", p, major, p)
	}
	cells := root.get("cells")
	if cells == nil || cells.kind != kindArray {
		return nil, fmt.Errorf("Notebook is not valid: %s has no \"cells\" list, so it is not an nbformat 4 notebook", p)
	}
	for i, c := range cells.elems {
		if c.kind != kindObject {
			return nil, fmt.Errorf("Notebook is not valid: cell %d of %s is not a JSON object. Fix the file, then Read it again", i, p)
		}
	}
	nb := &notebook{root: root, cells: cells, style: detectStyle(data)}
	if hasMajor {
		nb.ids = major > 4 || minor >= 5
	} else {
		nb.ids = len(cells.elems) > 0 && cells.elems[0].get("id").isString()
	}
	return nb, nil
}

// cellIndexID is Claude Code's name for a cell by index: cell-N, N 0-based.
var cellIndexID = regexp.MustCompile(`^cell-([0-9]+)$`)

// find returns the index of the cell with this id: its "id" field, or, as
// Claude Code does, cell-N for the cell at index N. Errors are Claude
// Code's, with what the model can use next.
func (nb *notebook) find(id string) (int, error) {
	for i, c := range nb.cells.elems {
		if v := c.get("id"); v.isString() && v.text() == id {
			return i, nil
		}
	}
	if m := cellIndexID.FindStringSubmatch(id); m != nil {
		n, err := strconv.Atoi(m[1])
		if err != nil || n >= len(nb.cells.elems) {
			return -1, fmt.Errorf("Cell with index %s does not exist in notebook.%s", m[1], nb.cellHint())
		}
		return n, nil
	}
	return -1, fmt.Errorf("Cell with ID \"%s\" not found in notebook.%s", id, nb.cellHint())
}

// maxHintIDs caps the ids listed in a not-found error.
const maxHintIDs = 20

// cellHint says which cell ids the notebook has.
func (nb *notebook) cellHint() string {
	n := len(nb.cells.elems)
	if n == 0 {
		return " The notebook has no cells: insert one with edit_mode=insert and no cell_id."
	}
	var ids []string
	for i, c := range nb.cells.elems {
		if v := c.get("id"); v.isString() {
			if len(ids) < maxHintIDs {
				ids = append(ids, strconv.Quote(v.text()))
			}
		} else if i == 0 {
			return fmt.Sprintf(" The notebook's %d cells have no ids: name them cell-0 to cell-%d by their 0-based index.", n, n-1)
		}
	}
	more := ""
	if n > len(ids) {
		more = fmt.Sprintf(", … (%d more)", n-len(ids))
	}
	return fmt.Sprintf(" The notebook has %d cells, with ids %s%s. Read the notebook again if it may have changed.", n, strings.Join(ids, ", "), more)
}

// replace sets the source of cell i, and its type when in.CellType is set.
// A code cell's outputs and execution count are cleared, as Claude Code
// (and Jupyter, on a change of source) does.
func (nb *notebook) replace(e *edit, i int, in input) {
	c := nb.cells.elems[i]
	e.index = i
	e.oldType = c.get("cell_type").text()
	e.oldSrc = sourceText(c.get("source"))
	e.newSrc = in.NewSource
	c.set("source", sourceValue(in.NewSource, nb.listForm(c.get("source"))))
	if e.oldType == "code" {
		e.cleared = hasOutputs(c)
		c.set("execution_count", literal("null"))
		c.set("outputs", emptyArray())
	}
	e.newType = e.oldType
	if in.CellType == "" || in.CellType == e.oldType {
		return
	}
	e.newType = in.CellType
	c.set("cell_type", stringValue(in.CellType))
	switch in.CellType {
	case "markdown": // nbformat allows neither field in a markdown cell
		c.del("outputs")
		c.del("execution_count")
	case "code": // nor attachments in a code cell, which needs these two
		c.del("attachments")
		c.set("execution_count", literal("null"))
		c.set("outputs", emptyArray())
	}
}

// insert adds a new cell at index i: with a new id in nbformat 4.5 and
// later, its keys in the order Jupyter writes them.
func (nb *notebook) insert(e *edit, i int, in input) {
	e.index, e.newType, e.newSrc = i, in.CellType, in.NewSource
	kv := []any{"cell_type", stringValue(in.CellType)}
	if in.CellType == "code" {
		kv = append(kv, "execution_count", literal("null"))
	}
	if nb.ids {
		e.cellID = nb.newID()
		kv = append(kv, "id", stringValue(e.cellID))
	} else {
		e.cellID = fmt.Sprintf("cell-%d", i)
	}
	kv = append(kv, "metadata", emptyObject())
	if in.CellType == "code" {
		kv = append(kv, "outputs", emptyArray())
	}
	kv = append(kv, "source", sourceValue(in.NewSource, nb.listForm(nil)))
	nb.cells.elems = slices.Insert(nb.cells.elems, i, object(kv...))
}

// delete removes cell i.
func (nb *notebook) delete(e *edit, i int) {
	c := nb.cells.elems[i]
	e.index, e.oldType, e.oldSrc = i, c.get("cell_type").text(), sourceText(c.get("source"))
	nb.cells.elems = slices.Delete(nb.cells.elems, i, i+1)
}

// newID returns a cell id as nbformat makes one (8 hex digits), unused in
// the notebook.
func (nb *notebook) newID() string {
	used := map[string]bool{}
	for _, c := range nb.cells.elems {
		used[c.get("id").text()] = true
	}
	for {
		var b [4]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail
		if id := hex.EncodeToString(b[:]); !used[id] {
			return id
		}
	}
}

// listForm reports whether a source should be written as a list of lines
// (as Jupyter writes it) rather than one string: as cur is, or, for a new
// cell, as the notebook's first cell has it.
func (nb *notebook) listForm(cur *value) bool {
	if cur == nil && len(nb.cells.elems) > 0 {
		cur = nb.cells.elems[0].get("source")
	}
	return cur == nil || !cur.isString()
}

// sourceValue is a cell source: a list of lines, each but the last with its
// "\n" (Jupyter's form), or one string.
func sourceValue(s string, list bool) *value {
	if !list {
		return stringValue(s)
	}
	v := emptyArray()
	for _, line := range strings.SplitAfter(s, "\n") {
		if line != "" {
			v.elems = append(v.elems, stringValue(line))
		}
	}
	return v
}

// sourceText is the text of a cell source in either form.
func sourceText(v *value) string {
	if v == nil {
		return ""
	}
	if v.kind == kindArray {
		var sb strings.Builder
		for _, e := range v.elems {
			sb.WriteString(e.text())
		}
		return sb.String()
	}
	return v.text()
}

// hasOutputs reports whether a code cell has outputs or an execution count.
func hasOutputs(c *value) bool {
	if o := c.get("outputs"); o != nil && o.kind == kindArray && len(o.elems) > 0 {
		return true
	}
	ec := c.get("execution_count")
	return ec != nil && string(ec.lit) != "null"
}

// resultText is what the model is told, in Claude Code's words. For a
// notebook without ids, an insert or a delete renumbers the cells after it.
func (e *edit) resultText() string {
	switch e.mode {
	case modeInsert:
		s := "Inserted cell " + e.cellID + " with " + e.newSrc
		if e.noIDs {
			s += "\n(The notebook's cells have no ids: the cells after the new one are now numbered one higher.)"
		}
		return s
	case modeDelete:
		s := "Deleted cell " + e.cellID
		if e.noIDs {
			s += "\n(The notebook's cells have no ids: the cells after it are now numbered one lower.)"
		}
		return s
	default:
		return "Updated cell " + e.cellID + " with " + e.newSrc
	}
}
