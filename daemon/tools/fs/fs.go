// Package fs implements the file tools Read, Write, Edit, MultiEdit and
// ReplaceLines, and the read-state rules they share: a file must be read in
// the session before it is changed, and must not have changed since.
//
// The tools see their session only through tool.Env and change it only
// through a Result's Modifier (tool.FileState records). They do not decide
// permissions: CheckPermission reports the real paths touched and whether
// they lie inside the working directories, and the pipeline decides. Every
// tool here is stateless and safe for concurrent use.
package fs

import (
	"encoding/json"
	"reflect"
	"unsafe"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// Options configures the file tools. A nil *Options means the defaults.
type Options struct {
	// MaxLines is the number of lines Read returns when no limit is given (2000).
	MaxLines int
	// MaxLineChars is the length in characters over which Read cuts a line (2000).
	MaxLineChars int
	// MaxReadBytes caps the text one Read returns (256 KiB).
	MaxReadBytes int
	// MaxImageBytes is the largest image file Read returns as an image block (5 MiB).
	MaxImageBytes int64
	// MaxEditBytes is the largest file the editing tools load into memory (256 MiB).
	MaxEditBytes int64
	// HashLimit is the size up to which a partial Read still hashes the whole
	// file for the read-state; larger files get no hash (64 MiB).
	HashLimit int64
	// DiffContext is the number of context lines in the displayed diff (3; 0 means the default).
	DiffContext int
	// MaxDisplayBytes caps the diff shown to clients (128 KiB).
	MaxDisplayBytes int
}

func (o *Options) withDefaults() *Options {
	var c Options
	if o != nil {
		c = *o
	}
	def := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	def64 := func(p *int64, v int64) {
		if *p <= 0 {
			*p = v
		}
	}
	def(&c.MaxLines, 2000)
	def(&c.MaxLineChars, 2000)
	def(&c.MaxReadBytes, 256<<10)
	def64(&c.MaxImageBytes, 5<<20)
	def64(&c.MaxEditBytes, 256<<20)
	def64(&c.HashLimit, 64<<20)
	def(&c.DiffContext, 3)
	def(&c.MaxDisplayBytes, 128<<10)
	return &c
}

// Tools returns Read, Write, Edit, MultiEdit and ReplaceLines, in that order.
func Tools(opts *Options) []tool.Tool {
	o := opts.withDefaults()
	return []tool.Tool{
		&Read{opts: o},
		&Write{opts: o},
		&Edit{opts: o},
		&MultiEdit{opts: o},
		&ReplaceLines{opts: o},
	}
}

// editMaxResultChars is the pipeline's persistence threshold for the editing
// tools: their text results are short snippets.
const editMaxResultChars = 100000

// decode unmarshals a schema-valid input. The pipeline validated it against
// the schema, so a failure here is an error the model can still act on.
func decode(input json.RawMessage, v any) error {
	if err := json.Unmarshal(input, v); err != nil {
		return &inputError{err}
	}
	return nil
}

// decoded is a call's input decoded once: Validate, CheckPermission and
// Run of one call each need it.
type decoded struct {
	input json.RawMessage // the Input it was decoded from
	v     reflect.Value   // a pointer to the decoded value
	// path and real are the file's path and its real path as
	// CheckPermission resolved them ("" before): Run checks them with one
	// stat instead of resolving the path again (see realPathOf).
	path, real string
}

// decodeCall decodes call.Input into v (a pointer), reusing the value
// decoded for an earlier method of the same call when Input is unchanged.
func decodeCall(call *tool.Call, v any) error {
	rv := reflect.ValueOf(v)
	if m, ok := call.Memo.(*decoded); ok && m.v.Type() == rv.Type() && sameBytes(m.input, call.Input) {
		rv.Elem().Set(m.v.Elem())
		return nil
	}
	if err := decode(call.Input, v); err != nil {
		return err
	}
	keep := reflect.New(rv.Type().Elem())
	keep.Elem().Set(rv.Elem())
	call.Memo = &decoded{input: call.Input, v: keep}
	return nil
}

// sameBytes reports whether a and b are the very same slice.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || unsafe.SliceData(a) == unsafe.SliceData(b))
}

type inputError struct{ err error }

func (e *inputError) Error() string {
	return "the input is not valid JSON for this tool (" + e.err.Error() + "); send an object that matches the input schema"
}

func (e *inputError) Unwrap() error { return e.err }
