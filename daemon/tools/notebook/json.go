package notebook

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The notebook is held as a tree that keeps the file's JSON as written:
// objects keep their key order, scalars their literal bytes (a number is not
// reparsed, a string keeps its escapes). Written back with the file's own
// indentation and separators (see style), whatever an edit does not touch is
// byte-identical to what was read: for a notebook saved by Jupyter (keys
// sorted, indent 1, non-ASCII unescaped, a final newline) the whole file is
// the same but for the edited cell.

type kind uint8

const (
	kindScalar kind = iota
	kindObject
	kindArray
)

// value is one JSON value of the tree.
type value struct {
	kind   kind
	lit    []byte   // a scalar's literal: a string with its quotes, a number, true, false, null
	fields []field  // an object's members, in file order
	elems  []*value // an array's elements
}

// field is one member of an object.
type field struct {
	key    string // decoded
	rawKey []byte // as written, with its quotes
	val    *value
}

// parseTree parses data, which must be valid JSON (json.Valid), into a tree.
func parseTree(data []byte) *value {
	p := &parser{data: data}
	return p.value()
}

type parser struct {
	data []byte
	pos  int
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value() *value {
	p.skipSpace()
	switch p.data[p.pos] {
	case '{':
		p.pos++
		v := &value{kind: kindObject}
		p.skipSpace()
		if p.data[p.pos] == '}' {
			p.pos++
			return v
		}
		for {
			p.skipSpace()
			raw := p.str()
			p.skipSpace()
			p.pos++ // ':'
			v.fields = append(v.fields, field{key: decodeString(raw), rawKey: raw, val: p.value()})
			p.skipSpace()
			c := p.data[p.pos]
			p.pos++
			if c == '}' {
				return v
			}
		}
	case '[':
		p.pos++
		v := &value{kind: kindArray}
		p.skipSpace()
		if p.data[p.pos] == ']' {
			p.pos++
			return v
		}
		for {
			v.elems = append(v.elems, p.value())
			p.skipSpace()
			c := p.data[p.pos]
			p.pos++
			if c == ']' {
				return v
			}
		}
	case '"':
		return &value{lit: p.str()}
	default:
		start := p.pos
		for p.pos < len(p.data) && !strings.ContainsRune(",}] \t\r\n", rune(p.data[p.pos])) {
			p.pos++
		}
		return &value{lit: p.data[start:p.pos]}
	}
}

// str scans a string literal and returns it with its quotes.
func (p *parser) str() []byte {
	start := p.pos
	p.pos++ // the opening quote
	for {
		switch p.data[p.pos] {
		case '\\':
			p.pos += 2
		case '"':
			p.pos++
			return p.data[start:p.pos]
		default:
			p.pos++
		}
	}
}

// decodeString decodes a string literal; it returns "" for anything else.
func decodeString(lit []byte) string {
	if len(lit) < 2 || lit[0] != '"' {
		return ""
	}
	if bytes.IndexByte(lit, '\\') < 0 {
		return string(lit[1 : len(lit)-1])
	}
	var s string
	if json.Unmarshal(lit, &s) != nil {
		return ""
	}
	return s
}

// isString reports whether v is a string scalar.
func (v *value) isString() bool {
	return v != nil && v.kind == kindScalar && len(v.lit) > 0 && v.lit[0] == '"'
}

// text returns v's decoded value when it is a string, else "".
func (v *value) text() string {
	if !v.isString() {
		return ""
	}
	return decodeString(v.lit)
}

// number returns v's value when it is an integer literal.
func (v *value) number() (int, bool) {
	if v == nil || v.kind != kindScalar {
		return 0, false
	}
	n, err := strconv.Atoi(string(v.lit))
	return n, err == nil
}

// get returns the member key of an object, or nil.
func (v *value) get(key string) *value {
	if v == nil || v.kind != kindObject {
		return nil
	}
	for _, f := range v.fields {
		if f.key == key {
			return f.val
		}
	}
	return nil
}

// set sets the member key of an object: in place when it exists, else in
// key order when the object's keys are sorted (as Jupyter writes them),
// else at the end.
func (v *value) set(key string, val *value) {
	for i := range v.fields {
		if v.fields[i].key == key {
			v.fields[i].val = val
			return
		}
	}
	f := field{key: key, rawKey: quote(key), val: val}
	sorted := slices.IsSortedFunc(v.fields, func(a, b field) int { return strings.Compare(a.key, b.key) })
	i := len(v.fields)
	if sorted {
		i, _ = slices.BinarySearchFunc(v.fields, key, func(f field, k string) int { return strings.Compare(f.key, k) })
	}
	v.fields = slices.Insert(v.fields, i, f)
}

// del removes the member key of an object, if present.
func (v *value) del(key string) {
	v.fields = slices.DeleteFunc(v.fields, func(f field) bool { return f.key == key })
}

// Constructors of new values.

func stringValue(s string) *value { return &value{lit: quote(s)} }
func literal(s string) *value     { return &value{lit: []byte(s)} }
func emptyObject() *value         { return &value{kind: kindObject} }
func emptyArray() *value          { return &value{kind: kindArray} }

// object builds an object with these members in this order (key, value, key, value, …).
func object(kv ...any) *value {
	v := emptyObject()
	for i := 0; i+1 < len(kv); i += 2 {
		k := kv[i].(string)
		v.fields = append(v.fields, field{key: k, rawKey: quote(k), val: kv[i+1].(*value)})
	}
	return v
}

// quote writes s as a JSON string the way Jupyter does (Python's json.dumps
// with ensure_ascii=False): only the quote, the backslash and control
// characters are escaped; everything else, non-ASCII included, is written as is.
func quote(s string) []byte {
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	for _, r := range strings.ToValidUTF8(s, string(utf8.RuneError)) {
		switch r {
		case '"':
			b = append(b, `\"`...)
		case '\\':
			b = append(b, `\\`...)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '\t':
			b = append(b, `\t`...)
		case '\b':
			b = append(b, `\b`...)
		case '\f':
			b = append(b, `\f`...)
		default:
			if r < 0x20 {
				b = append(b, `\u00`...)
				b = append(b, "0123456789abcdef"[r>>4], "0123456789abcdef"[r&0xf])
			} else {
				b = utf8.AppendRune(b, r)
			}
		}
	}
	return append(b, '"')
}

// style is the layout of a JSON file, read from its first object.
type style struct {
	pretty  bool   // members and elements on lines of their own
	indent  string // one level of indentation, when pretty
	newline string // "\n" or "\r\n", when pretty
	colon   string // between a key and its value: ": " (Jupyter) or ":"
	comma   string // between members and elements: "," (", " in a one-line file written with ", ")
	lead    []byte // what precedes the top-level value (a BOM, spaces)
	trail   []byte // what follows it (Jupyter: "\n")
}

// jupyterStyle is how Jupyter writes a notebook: json.dumps(nb,
// sort_keys=True, indent=1, ensure_ascii=False) and a final newline.
var jupyterStyle = style{pretty: true, indent: " ", newline: "\n", colon: ": ", comma: ",", trail: []byte("\n")}

// detectStyle reads the layout of data (valid JSON whose top-level value is
// an object) from the space after its first brace and around its first
// colon. A file it cannot tell about gets Jupyter's style.
func detectStyle(data []byte) style {
	st := jupyterStyle
	start := len(data) - len(bytes.TrimLeft(data, " \t\r\n"))
	end := len(bytes.TrimRight(data, " \t\r\n"))
	if start >= end || data[start] != '{' {
		return st
	}
	st.lead, st.trail = data[:start], data[end:]
	p := &parser{data: data, pos: start + 1}
	p.skipSpace()
	ws := data[start+1 : p.pos]
	if data[p.pos] != '"' {
		return st // an empty object: keep Jupyter's layout for members
	}
	if i := bytes.LastIndexByte(ws, '\n'); i >= 0 {
		st.pretty, st.indent = true, string(ws[i+1:])
		st.newline = "\n"
		if bytes.Contains(ws, []byte("\r\n")) {
			st.newline = "\r\n"
		}
	} else {
		st.pretty, st.indent, st.newline = false, "", ""
	}
	p.str()
	colonStart := p.pos
	p.skipSpace()
	p.pos++ // ':'
	p.skipSpace()
	st.colon = string(data[colonStart:p.pos])
	if !st.pretty && st.colon == ": " {
		st.comma = ", " // Python's json.dumps without indent
	}
	return st
}

// encode writes the tree in style st.
func encode(v *value, st style) []byte {
	var b bytes.Buffer
	b.Write(st.lead)
	v.write(&b, st, 0)
	b.Write(st.trail)
	return b.Bytes()
}

func (v *value) write(b *bytes.Buffer, st style, depth int) {
	switch v.kind {
	case kindScalar:
		b.Write(v.lit)
	case kindObject:
		if len(v.fields) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteByte('{')
		for i, f := range v.fields {
			if i > 0 {
				b.WriteString(st.comma)
			}
			st.breakLine(b, depth+1)
			b.Write(f.rawKey)
			b.WriteString(st.colon)
			f.val.write(b, st, depth+1)
		}
		st.breakLine(b, depth)
		b.WriteByte('}')
	case kindArray:
		if len(v.elems) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteByte('[')
		for i, e := range v.elems {
			if i > 0 {
				b.WriteString(st.comma)
			}
			st.breakLine(b, depth+1)
			e.write(b, st, depth+1)
		}
		st.breakLine(b, depth)
		b.WriteByte(']')
	}
}

// breakLine starts a new line at depth, in a pretty style.
func (st style) breakLine(b *bytes.Buffer, depth int) {
	if !st.pretty {
		return
	}
	b.WriteString(st.newline)
	for range depth {
		b.WriteString(st.indent)
	}
}
