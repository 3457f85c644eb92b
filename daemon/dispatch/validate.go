package dispatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	fastjson "github.com/segmentio/encoding/json"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// schemaCache compiles each tool's input schema once. It is keyed by tool
// name, then by the schema's bytes, so a tool whose schema changes (an MCP
// server's tools/list_changed) gets a fresh compile. A lookup hashes the
// name and compares the schema: no key is built on the call's path.
type schemaCache struct {
	mu sync.RWMutex // guards m and n
	m  map[string][]*compiled
	n  int // compiled schemas held
}

type compiled struct {
	schema []byte // the bytes it was compiled from
	sch    *jsonschema.Schema
	err    error // the schema itself does not compile
}

// maxSchemasPerName bounds the versions of one tool's schema kept (two
// sessions' servers may name a tool alike); past it the oldest goes.
const maxSchemasPerName = 4

// maxCachedSchemas bounds the cache; past it the cache starts over.
const maxCachedSchemas = 4096

var printer = message.NewPrinter(language.English)

// noLoader refuses every external reference: a tool schema is self-contained
// and never makes the daemon read files or the network.
type noLoader struct{}

func (noLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("loading %s: external schema references are not supported", u)
}

func (c *schemaCache) get(name string, schema json.RawMessage) *compiled {
	c.mu.RLock()
	e := find(c.m[name], schema)
	c.mu.RUnlock()
	if e != nil {
		return e
	}
	e = compileSchema(name, schema)
	e.schema = bytes.Clone(schema)
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := find(c.m[name], schema); old != nil {
		return old
	}
	if c.m == nil || c.n >= maxCachedSchemas {
		c.m, c.n = map[string][]*compiled{}, 0
	}
	versions := c.m[name]
	if len(versions) >= maxSchemasPerName {
		versions = versions[1:]
		c.n--
	}
	c.m[name] = append(versions, e)
	c.n++
	return e
}

func find(versions []*compiled, schema []byte) *compiled {
	for _, e := range versions {
		if bytes.Equal(e.schema, schema) {
			return e
		}
	}
	return nil
}

func compileSchema(name string, schema json.RawMessage) *compiled {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return &compiled{err: fmt.Errorf("parsing the input schema of %s: %w", name, err)}
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	loc := "tackle:///tools/" + url.PathEscape(name) + ".json"
	if err := c.AddResource(loc, doc); err != nil {
		return &compiled{err: fmt.Errorf("adding the input schema of %s: %w", name, err)}
	}
	sch, err := c.Compile(loc)
	if err != nil {
		return &compiled{err: fmt.Errorf("compiling the input schema of %s: %w", name, err)}
	}
	return &compiled{sch: sch}
}

// decodeInput decodes a call's input for validation as
// jsonschema.UnmarshalJSON does (numbers as json.Number, one value, nothing
// after it). A small input (at most fastBrackets arrays and objects) is
// decoded by a decoder that takes half the time of encoding/json's and
// gives the same values (FuzzDecodeInput); it is not used on more, as its
// time grows with the square of the nesting depth (2.5 s at 10,000). An
// input it refuses is decoded again by jsonschema's own, for its error.
func decodeInput(input []byte) (any, error) {
	if bytes.Count(input, []byte{'['})+bytes.Count(input, []byte{'{'}) <= fastBrackets {
		var doc any
		if rest, err := fastjson.Parse(input, &doc, fastjson.UseNumber); err == nil && len(bytes.TrimLeft(rest, " \t\r\n")) == 0 {
			return doc, nil
		}
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(input))
}

// fastBrackets bounds the brackets of an input decodeInput decodes fast.
const fastBrackets = 32

// toolUseError wraps a message for the model the way reference.md section 2 does.
func toolUseError(msg string) string {
	return "<tool_use_error>" + msg + "</tool_use_error>"
}

// checkInput parses input and validates it against the tool's schema. It
// returns the normalised input ("{}" for empty) or the model-facing error text.
func (d *Dispatcher) checkInput(t tool.Tool, name string, input json.RawMessage) (json.RawMessage, string) {
	if len(bytes.TrimSpace(input)) == 0 {
		input = json.RawMessage("{}")
	}
	doc, err := decodeInput(input)
	if err != nil {
		return nil, toolUseError(fmt.Sprintf("InputValidationError: the input of %s is not valid JSON: %v. Send a JSON object.", name, err))
	}
	if _, ok := doc.(map[string]any); !ok {
		return nil, toolUseError(fmt.Sprintf("InputValidationError: the input of %s must be a JSON object, got %s.", name, jsonKind(doc)))
	}
	schema := t.Spec().InputSchema
	if len(bytes.TrimSpace(schema)) == 0 {
		return input, ""
	}
	c := d.schemas.get(t.Spec().Name, schema)
	if c.err != nil {
		d.log.Error("tool has an invalid input schema", "tool", name, "error", c.err)
		return nil, toolUseError(fmt.Sprintf("InputValidationError: %s cannot be called: its input schema is invalid (%v). This is a bug in the tool, not in your input.", name, c.err))
	}
	if err := c.sch.Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return nil, toolUseError(fmt.Sprintf("InputValidationError: %s: %v", name, err))
		}
		lines := schemaErrorLines(ve)
		return nil, toolUseError(fmt.Sprintf("InputValidationError: %s failed due to the following %s:\n%s",
			name, plural(len(lines), "issue", "issues"), strings.Join(lines, "\n")))
	}
	return input, ""
}

// schemaErrorLines lists every leaf error of a validation error, one line
// each, with its instance path.
func schemaErrorLines(ve *jsonschema.ValidationError) []string {
	var lines []string
	seen := map[string]bool{}
	add := func(l string) {
		if !seen[l] {
			seen[l] = true
			lines = append(lines, l)
		}
	}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		switch k := e.ErrorKind.(type) {
		case *kind.Required:
			for _, p := range k.Missing {
				add(fmt.Sprintf("- %s: missing required property", pointer(append(append([]string(nil), e.InstanceLocation...), p))))
			}
		case *kind.AdditionalProperties:
			for _, p := range k.Properties {
				add(fmt.Sprintf("- %s: unexpected property (not in the schema)", pointer(append(append([]string(nil), e.InstanceLocation...), p))))
			}
		default:
			add(fmt.Sprintf("- %s: %s", pointer(e.InstanceLocation), e.ErrorKind.LocalizedString(printer)))
		}
	}
	walk(ve)
	return lines
}

// pointer renders an instance location as a JSON pointer; the root is "(root)".
func pointer(toks []string) string {
	if len(toks) == 0 {
		return "(root)"
	}
	var sb strings.Builder
	for _, t := range toks {
		sb.WriteByte('/')
		t = strings.ReplaceAll(t, "~", "~0")
		sb.WriteString(strings.ReplaceAll(t, "/", "~1"))
	}
	return sb.String()
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
