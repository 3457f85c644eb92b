package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/tool"
)

// Event bounds. An event is one message of a replay (and one row of a
// chunk): a 16.5 MB event once made a session unreplayable, since a gRPC
// client takes messages of at most 4 MB. An event over maxEventBytes has
// every field over maxFieldBytes (call inputs, result blocks, progress and
// notice text, a result's display or structured content) stored as a file
// in the session's outputs directory and replaced by a preview and the
// path, as the pipeline does with large tool outputs. The transcript
// messages (Message) are stored whole, since the conversation is rebuilt
// from them, and bounded only where they are sent (Bounded).
const (
	maxEventBytes   = 1 << 20
	maxFieldBytes   = 64 << 10
	fieldPreviewLen = 2000
)

// StoredField is what replaces a call input over the bound in an event:
// a JSON object with one member, "tackle_stored", so that it stays valid
// JSON where an input is expected.
type StoredField struct {
	Path    string `json:"path,omitempty"`
	Bytes   int    `json:"bytes"`
	Preview string `json:"preview"`
	Error   string `json:"error,omitempty"`
}

// approxSize is about the size of e as JSON: its variable fields.
func approxSize(e *event.Event) int {
	n := 512 + len(e.Text) + len(e.Message)
	if e.Turn != nil {
		for _, c := range e.Turn.Calls {
			n += 64 + len(c.Input) + len(c.ID) + len(c.Name)
		}
	}
	if p := e.Permission; p != nil {
		n += len(p.Input) + len(p.Reason) + len(p.AlwaysRule)
	}
	if r := e.Result; r != nil {
		n += len(r.Display) + len(r.Structured)
		for _, c := range r.Content {
			n += 32 + len(c.Text) + len(c.Data)*4/3 + len(c.URI)
		}
	}
	if h := e.Hook; h != nil {
		n += len(h.Reason) + len(h.Hook)
	}
	if s := e.Session; s != nil {
		n += len(s.Todos) + len(s.Note)
	}
	return n
}

// boundEvent shrinks e (a copy the caller owns; what it points to is
// copied before it is changed) to the event bounds. appendMu is held.
func (s *Session) boundEvent(e *event.Event) {
	if approxSize(e) <= maxEventBytes {
		return
	}
	save := func(what, text string) (string, error) { return s.saveField(e.Seq, what, text) }
	text := func(what, t string) string { return s.boundText(e.Seq, what, t) }
	raw := func(what string, r json.RawMessage) json.RawMessage {
		if len(r) <= maxFieldBytes {
			return r
		}
		sf := StoredField{Bytes: len(r), Preview: fieldPreview(string(r))}
		if path, err := save(what, string(r)); err != nil {
			s.log.Error("storing a large event field", "seq", e.Seq, "field", what, "error", err)
			sf.Error = err.Error()
		} else {
			sf.Path = path
		}
		b, _ := json.Marshal(map[string]StoredField{"tackle_stored": sf}) // strings and ints
		return b
	}
	e.Text = text("text", e.Text)
	if e.Turn != nil {
		t := *e.Turn
		t.Calls = append([]event.CallInfo(nil), t.Calls...)
		for i := range t.Calls {
			t.Calls[i].Input = raw(fmt.Sprintf("input-%d", i), t.Calls[i].Input)
		}
		e.Turn = &t
	}
	if e.Permission != nil {
		p := *e.Permission
		p.Input = raw("input", p.Input)
		p.Reason = text("reason", p.Reason)
		e.Permission = &p
	}
	if e.Result != nil {
		r := *e.Result
		r.Display = text("display", r.Display)
		r.Structured = raw("structured", r.Structured)
		r.Content = append([]tool.Content(nil), r.Content...)
		for i, c := range r.Content {
			if len(c.Data) > maxFieldBytes {
				path, err := save(fmt.Sprintf("content-%d.data", i), string(c.Data))
				msg := fmt.Sprintf("(%s block of %d bytes, %s, too large for the session log; saved to %s)", c.Type, len(c.Data), c.MimeType, path)
				if err != nil {
					msg = fmt.Sprintf("(%s block of %d bytes, %s, too large for the session log; saving it failed: %v)", c.Type, len(c.Data), c.MimeType, err)
				}
				r.Content[i] = tool.Text(msg)
				continue
			}
			c.Text = text(fmt.Sprintf("content-%d", i), c.Text)
			r.Content[i] = c
		}
		e.Result = &r
	}
	if e.Hook != nil {
		h := *e.Hook
		h.Reason = text("hook-reason", h.Reason)
		e.Hook = &h
	}
}

// saveField writes the text of one large field of event seq to a file of
// the session's outputs directory and returns its path. A file of that
// name and size is taken as already written (a replay bounds an old event
// again each time it is sent).
func (s *Session) saveField(seq uint64, what, text string) (string, error) {
	path := filepath.Join(s.OutputDir(), fmt.Sprintf("event-%d-%s.txt", seq, what))
	if fi, err := os.Stat(path); err == nil && fi.Size() == int64(len(text)) {
		return path, nil
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		return "", err
	}
	return path, nil
}

// boundText returns t if it is within maxFieldBytes, else a preview of it
// and the path of the file that holds it whole (see saveField).
func (s *Session) boundText(seq uint64, what, t string) string {
	if len(t) <= maxFieldBytes {
		return t
	}
	path, err := s.saveField(seq, what, t)
	if err != nil {
		s.log.Error("storing a large event field", "seq", seq, "field", what, "error", err)
		return fmt.Sprintf("<stored-output>\n%s too large for the session log (%d bytes), and saving it failed (%v): only a preview is kept.\n\nPreview:\n%s\n...\n</stored-output>", what, len(t), err, fieldPreview(t))
	}
	return fmt.Sprintf("<stored-output>\n%s too large for the session log (%d bytes). Full text saved to: %s\n\nPreview:\n%s\n...\n</stored-output>", what, len(t), path, fieldPreview(t))
}

// boundMessage returns the transcript message m with every string over
// maxFieldBytes in it (a text block, a tool input's member, a tool
// result's text, an image's data) replaced by a preview and a path (see
// boundText), for sending: the message keeps its shape. A message that is
// not JSON is replaced by a JSON string saying where it was saved.
func (s *Session) boundMessage(seq uint64, m json.RawMessage) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(m))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		b, _ := json.Marshal(s.boundText(seq, "message", string(m)))
		return b
	}
	n := 0
	var walk func(v any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case string:
			if len(v) > maxFieldBytes {
				n++
				return s.boundText(seq, fmt.Sprintf("message-%d", n), v)
			}
		case []any:
			for i := range v {
				v[i] = walk(v[i])
			}
		case map[string]any:
			for k := range v {
				v[k] = walk(v[k])
			}
		}
		return v
	}
	b, err := json.Marshal(walk(v))
	if err != nil { // not for values json decoded
		b, _ = json.Marshal(s.boundText(seq, "message", string(m)))
	}
	return b
}

// fieldPreview is the first fieldPreviewLen bytes of t, cut at a rune
// boundary.
func fieldPreview(t string) string {
	if len(t) <= fieldPreviewLen {
		return t
	}
	cut := fieldPreviewLen
	for cut > 0 && !utf8.RuneStart(t[cut]) {
		cut--
	}
	return strings.ToValidUTF8(t[:cut], "")
}

// EventSize is about the size of e as JSON (cheap: no encoding).
func EventSize(e *event.Event) int { return approxSize(e) }

// Bounded returns e within the event bounds, for sending: e itself when it
// is, else a copy whose large fields are stored as files (see
// maxEventBytes), its transcript message included (see boundMessage).
// For events stored before the bounds existed and for large messages,
// which a replay must still be able to send.
func (s *Session) Bounded(e *event.Event) *event.Event {
	if approxSize(e) <= maxEventBytes {
		return e
	}
	c := *e
	s.boundEvent(&c)
	if approxSize(&c) > maxEventBytes && len(c.Message) > maxFieldBytes {
		c.Message = s.boundMessage(c.Seq, c.Message)
	}
	return &c
}
