package model

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// DefaultAnthropicBaseURL is the Anthropic API's root (tackle adds
// /v1/messages).
const DefaultAnthropicBaseURL = "https://api.anthropic.com"

// AnthropicVersion is the anthropic-version header sent: the version of the
// docs and of anthropic-sdk-go v1 (v2's 2026-10-21 rejects sampling
// parameters, which tackle does not send either).
const AnthropicVersion = "2023-06-01"

// defaultMaxTokens is max_tokens when a Request has none (the API needs one).
const defaultMaxTokens = 8192

// AnthropicOptions configures NewAnthropic; nil means all defaults.
type AnthropicOptions struct {
	// BaseURL is the server's root (default DefaultAnthropicBaseURL).
	BaseURL string
	// APIKey is sent as x-api-key; AuthToken as authorization: Bearer.
	// Both are sent when both are set, as Claude Code does.
	APIKey    string
	AuthToken string
	// Headers are added to every request, after the ones above (so they
	// can replace them: anthropic-beta, a proxy's own auth).
	Headers map[string]string
	// HTTPClient sends the requests (default: a client without timeout;
	// the context bounds a request).
	HTTPClient *http.Client
	// MaxRetries is the retries after a first failed attempt: 0 means
	// DefaultMaxRetries, a negative value none.
	MaxRetries int
	// UserAgent is the user-agent header (default "tackle").
	UserAgent string
	// KeyVar, BaseURLVar and ModelVar name what sets the key, the base URL
	// and the model, for the hints of errors (defaults: "ANTHROPIC_API_KEY
	// (or ANTHROPIC_AUTH_TOKEN)", "ANTHROPIC_BASE_URL", `"model" in
	// settings (or ANTHROPIC_MODEL, or --model)`).
	KeyVar, BaseURLVar, ModelVar string
}

type anthropicProvider struct {
	t transport
}

// NewAnthropic returns a provider for the Anthropic Messages API
// (POST {BaseURL}/v1/messages with stream: true). It starts nothing; the
// provider is safe for concurrent use.
func NewAnthropic(opts *AnthropicOptions) Provider {
	var o AnthropicOptions
	if opts != nil {
		o = *opts
	}
	if o.BaseURL == "" {
		o.BaseURL = DefaultAnthropicBaseURL
	}
	if o.KeyVar == "" {
		o.KeyVar = "ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)"
	}
	if o.BaseURLVar == "" {
		o.BaseURLVar = "ANTHROPIC_BASE_URL"
	}
	if o.ModelVar == "" {
		o.ModelVar = `"model" in settings (or ANTHROPIC_MODEL, or --model)`
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "text/event-stream")
	h.Set("Anthropic-Version", AnthropicVersion)
	if o.APIKey != "" {
		h.Set("X-Api-Key", o.APIKey)
	}
	if o.AuthToken != "" {
		h.Set("Authorization", "Bearer "+o.AuthToken)
	}
	h.Set("User-Agent", cmp.Or(o.UserAgent, "tackle"))
	for k, v := range o.Headers {
		h.Set(k, v)
	}
	return &anthropicProvider{t: transport{
		provider:   "anthropic",
		url:        strings.TrimRight(o.BaseURL, "/") + "/v1/messages",
		baseURL:    o.BaseURL,
		baseURLVar: o.BaseURLVar,
		keyVar:     o.KeyVar,
		modelVar:   o.ModelVar,
		hasKey:     h.Get("X-Api-Key") != "" || h.Get("Authorization") != "",
		client:     cmp.Or(o.HTTPClient, http.DefaultClient),
		header:     h,
		maxRetries: retries(o.MaxRetries),
		apiError:   anthropicAPIError,
	}}
}

func (p *anthropicProvider) Stream(ctx context.Context, req Request) (Stream, error) {
	if req.Model == "" {
		return nil, &Error{Provider: "anthropic", Type: ErrInvalidRequest, Message: "the request names no model", Hint: "set " + p.t.modelVar}
	}
	if !p.t.hasKey && officialHost(p.t.baseURL, "api.anthropic.com") {
		return nil, &Error{Provider: "anthropic", Type: ErrMissingKey, Message: "no API key for " + p.t.baseURL, Hint: "set " + p.t.keyVar}
	}
	body, err := encodeAnthropic(anthropicBody(&req))
	if err != nil {
		return nil, &Error{Provider: "anthropic", Type: ErrInvalidRequest, Message: "encoding the request: " + err.Error(), Err: err}
	}
	return p.t.open(ctx, body, req.Retry, req.Model, func() decoder { return &anthropicDecoder{} })
}

// encodeAnthropic is json.Marshal(r) with the tools last and each tool's
// encoding reused from earlier requests: the tools (tens of schemas and
// long descriptions) are most of a request's bytes, are the same request
// after request, and cost encoding/json a string escape and a compaction
// of every schema each time (about half a millisecond a request here).
func encodeAnthropic(r *antRequest) ([]byte, error) {
	tools := r.Tools
	r.Tools = nil
	b, err := json.Marshal(r)
	r.Tools = tools
	if err != nil || len(tools) == 0 {
		return b, err
	}
	out := make([]byte, 0, len(b)+64*len(tools))
	out = append(out, b[:len(b)-1]...) // without its closing brace
	out = append(out, `,"tools":[`...)
	for i := range tools {
		if i > 0 {
			out = append(out, ',')
		}
		enc, err := toolEncodings.get(&tools[i])
		if err != nil {
			return nil, err
		}
		out = append(out, enc...)
	}
	return append(out, "]}"...), nil
}

// toolEncodings caches tools' JSON by content.
var toolEncodings = &toolCache{m: map[uint64][]*cachedTool{}, seed: maphash.MakeSeed()}

// maxCachedTools bounds the cache; past it, it starts again empty.
const maxCachedTools = 4096

type toolCache struct {
	mu   sync.Mutex
	seed maphash.Seed
	m    map[uint64][]*cachedTool
	n    int
}

type cachedTool struct {
	name, desc string
	schema     []byte
	enc        []byte
}

// get returns t's encoding, json.Marshal's bytes for it.
func (c *toolCache) get(t *antTool) ([]byte, error) {
	var h maphash.Hash
	h.SetSeed(c.seed)
	h.WriteString(t.Name)
	h.WriteByte(0)
	h.WriteString(t.Description)
	h.WriteByte(0)
	h.Write(t.InputSchema)
	k := h.Sum64()
	c.mu.Lock()
	for _, e := range c.m[k] {
		if e.name == t.Name && e.desc == t.Description && bytes.Equal(e.schema, t.InputSchema) {
			c.mu.Unlock()
			return e.enc, nil
		}
	}
	c.mu.Unlock()
	enc, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n >= maxCachedTools {
		clear(c.m)
		c.n = 0
	}
	c.m[k] = append(c.m[k], &cachedTool{name: t.Name, desc: t.Description, schema: bytes.Clone(t.InputSchema), enc: enc})
	c.n++
	return enc, nil
}

// anthropicAPIError reads {"type":"error","error":{"type","message"}}.
func anthropicAPIError(e *Error, body []byte) {
	var v struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &v) == nil {
		e.Type, e.Message = v.Error.Type, v.Error.Message
	}
}

// The request's wire form.

type antRequest struct {
	Model     string         `json:"model"`
	MaxTokens int            `json:"max_tokens"`
	System    []antBlock     `json:"system,omitempty"`
	Messages  []antMessage   `json:"messages"`
	Tools     []antTool      `json:"tools,omitempty"`
	Thinking  map[string]any `json:"thinking,omitempty"`
	Stream    bool           `json:"stream"`
}

type antMessage struct {
	Role    string `json:"role"`
	Content []any  `json:"content"` // antBlock or json.RawMessage
}

type antTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type antBlock struct {
	Type         string          `json:"type"`
	Text         *string         `json:"text,omitempty"`
	Thinking     *string         `json:"thinking,omitempty"`
	Signature    *string         `json:"signature,omitempty"`
	Data         string          `json:"data,omitempty"`
	ID           string          `json:"id,omitempty"`
	Name         string          `json:"name,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
	ToolUseID    string          `json:"tool_use_id,omitempty"`
	IsError      bool            `json:"is_error,omitempty"`
	Content      any             `json:"content,omitempty"` // []antBlock
	Source       *antSource      `json:"source,omitempty"`
	CacheControl *cacheControl   `json:"cache_control,omitempty"`
}

type antSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

type cacheControl struct {
	Type string `json:"type"`
}

var ephemeral = &cacheControl{Type: "ephemeral"}

// anthropicBody maps req to the wire. Prompt caching: cache_control marks
// the system prompt (which caches the tools before it) and the last message's
// last block that may carry one (not a thinking block, not an empty text),
// so each request reads the conversation so far from the cache and writes
// its new end. Blocks the API would reject are left out: empty text blocks,
// and thinking blocks without a signature (another provider's).
func anthropicBody(req *Request) *antRequest {
	r := &antRequest{Model: req.Model, MaxTokens: req.MaxTokens, Stream: true, Messages: []antMessage{}}
	if r.MaxTokens <= 0 {
		r.MaxTokens = defaultMaxTokens
	}
	if req.System != "" {
		r.System = []antBlock{{Type: BlockText, Text: &req.System, CacheControl: ephemeral}}
	}
	for _, t := range req.Tools {
		schema := t.InputSchema
		if len(bytes.TrimSpace(schema)) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		r.Tools = append(r.Tools, antTool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	switch {
	case req.Thinking > 0:
		r.Thinking = map[string]any{"type": "enabled", "budget_tokens": req.Thinking}
	case req.Thinking < 0:
		r.Thinking = map[string]any{"type": "adaptive"}
	}
	for _, m := range req.Messages {
		wm := antMessage{Role: m.Role, Content: []any{}}
		for i := range m.Content {
			if b, ok := antWireBlock(&m.Content[i]); ok {
				wm.Content = append(wm.Content, b)
			}
		}
		r.Messages = append(r.Messages, wm)
	}
	if n := len(r.Messages); n > 0 {
		c := r.Messages[n-1].Content
		for i := len(c) - 1; i >= 0; i-- {
			if b, ok := c[i].(*antBlock); ok && b.Type != BlockThinking && b.Type != BlockRedactedThinking {
				b.CacheControl = ephemeral
				break
			}
		}
	}
	return r
}

// antWireBlock is b's wire form (*antBlock, or json.RawMessage for Raw),
// false for a block to leave out.
func antWireBlock(b *Block) (any, bool) {
	switch b.Type {
	case BlockText:
		if b.Text == "" {
			return nil, false
		}
		return &antBlock{Type: BlockText, Text: &b.Text}, true
	case BlockThinking:
		if b.Signature == "" {
			return nil, false
		}
		return &antBlock{Type: BlockThinking, Thinking: &b.Thinking, Signature: &b.Signature}, true
	case BlockRedactedThinking:
		return &antBlock{Type: BlockRedactedThinking, Data: b.Data}, true
	case BlockToolUse:
		in := b.Input
		if !validObject(in) {
			in = json.RawMessage("{}")
		}
		return &antBlock{Type: BlockToolUse, ID: b.ID, Name: b.Name, Input: in}, true
	case BlockToolResult:
		w := &antBlock{Type: BlockToolResult, ToolUseID: b.ToolUseID, IsError: b.IsError}
		var content []antBlock
		if b.Text != "" {
			content = append(content, antBlock{Type: BlockText, Text: &b.Text})
		}
		for i := range b.Content {
			c := &b.Content[i]
			switch c.Type {
			case BlockText:
				if c.Text != "" {
					content = append(content, antBlock{Type: BlockText, Text: &c.Text})
				}
			case BlockImage:
				content = append(content, antBlock{Type: BlockImage, Source: &antSource{Type: "base64", MediaType: c.MediaType, Data: c.Source}})
			}
		}
		if len(content) > 0 {
			w.Content = content
		}
		return w, true
	case BlockImage:
		return &antBlock{Type: BlockImage, Source: &antSource{Type: "base64", MediaType: b.MediaType, Data: b.Source}}, true
	}
	if len(b.Raw) > 0 {
		return b.Raw, true
	}
	return nil, false
}

// The stream's wire form: one struct for every event type.

type antEvent struct {
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Message *struct {
		ID         string            `json:"id"`
		Model      string            `json:"model"`
		Usage      *antUsage         `json:"usage"`
		Content    []json.RawMessage `json:"content"`
		StopReason string            `json:"stop_reason"`
	} `json:"message"`
	ContentBlock json.RawMessage `json:"content_block"`
	Delta        *struct {
		Type         string  `json:"type"`
		Text         string  `json:"text"`
		Thinking     string  `json:"thinking"`
		Signature    string  `json:"signature"`
		PartialJSON  string  `json:"partial_json"`
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	} `json:"delta"`
	Usage *antUsage `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// antUsage has pointers: message_delta's fields win one by one.
type antUsage struct {
	InputTokens              *int `json:"input_tokens"`
	OutputTokens             *int `json:"output_tokens"`
	CacheCreationInputTokens *int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int `json:"cache_read_input_tokens"`
}

func (u *antUsage) mergeInto(dst *Usage) {
	if u == nil {
		return
	}
	for _, f := range [...]struct {
		src *int
		dst *int
	}{
		{u.InputTokens, &dst.InputTokens}, {u.OutputTokens, &dst.OutputTokens},
		{u.CacheCreationInputTokens, &dst.CacheCreationInputTokens}, {u.CacheReadInputTokens, &dst.CacheReadInputTokens},
	} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
}

type antContentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

// blockState is a block being streamed.
type blockState struct {
	buf      strings.Builder // text, thinking or tool input
	sig      strings.Builder
	start    json.RawMessage // a tool_use's start input; an unknown block's JSON
	sawInput bool            // an input_json_delta arrived
	stopped  bool            // content_block_stop arrived
	done     bool            // finalized into the Block
}

// anthropicDecoder accumulates a Messages API stream. The event's type is
// read from its JSON ("type"), the event: line only when the JSON has none:
// the two always agree on the API, and a data-only stream (a proxy's)
// parses too.
type anthropicDecoder struct {
	resp      Response
	states    []*blockState // parallel to resp.Message.Content
	pos       []int         // the API's index → position+1 in Content
	final     bool
	sawStart  bool
	sawFinish bool // message_delta
}

func (d *anthropicDecoder) event(name, data []byte, out []Event) ([]Event, bool, error) {
	var ev antEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return out, false, d.invalid("event %q does not parse: %v", name, err)
	}
	typ := ev.Type
	if typ == "" {
		typ = string(name)
	}
	switch typ {
	case "message_start":
		if ev.Message != nil {
			d.sawStart = true
			d.resp.ID, d.resp.Model = ev.Message.ID, ev.Message.Model
			ev.Message.Usage.mergeInto(&d.resp.Usage)
			// Normally empty; a message that is whole at the start (with
			// programmatic tool calling, a tool call made from code
			// execution) has its blocks and stop reason here, and no
			// content_block or message_delta events follow.
			for j, raw := range ev.Message.Content {
				var err error
				if out, _, err = d.blockStart(j, raw, out); err != nil {
					return out, false, err
				}
				i := len(d.states) - 1
				d.states[i].stopped = true
				d.finalize(i)
				out = append(out, Event{Type: EventBlockStop, Index: i})
			}
			if ev.Message.StopReason != "" {
				d.resp.StopReason = ev.Message.StopReason
			}
		}
	case "content_block_start":
		return d.blockStart(ev.Index, ev.ContentBlock, out)
	case "content_block_delta":
		if ev.Delta == nil {
			return out, false, d.invalid("content_block_delta without a delta")
		}
		i, st, err := d.block(ev.Index)
		if err != nil {
			return out, false, err
		}
		switch ev.Delta.Type {
		case "text_delta":
			st.buf.WriteString(ev.Delta.Text)
			if ev.Delta.Text != "" {
				out = append(out, Event{Type: EventText, Index: i, Text: ev.Delta.Text})
			}
		case "thinking_delta":
			st.buf.WriteString(ev.Delta.Thinking)
			if ev.Delta.Thinking != "" {
				out = append(out, Event{Type: EventThinking, Index: i, Text: ev.Delta.Thinking})
			}
		case "signature_delta":
			st.sig.WriteString(ev.Delta.Signature)
			out = append(out, Event{Type: EventThinking, Index: i, Signature: ev.Delta.Signature})
		case "input_json_delta":
			st.sawInput = true
			st.buf.WriteString(ev.Delta.PartialJSON)
			if ev.Delta.PartialJSON != "" {
				out = append(out, Event{Type: EventToolInput, Index: i, Text: ev.Delta.PartialJSON})
			}
		default:
			// citations_delta and deltas of later API versions: nothing to keep
		}
	case "content_block_stop":
		i, st, err := d.block(ev.Index)
		if err != nil {
			return out, false, err
		}
		st.stopped = true
		d.finalize(i)
		out = append(out, Event{Type: EventBlockStop, Index: i})
	case "message_delta":
		d.sawFinish = true
		if ev.Delta != nil {
			if ev.Delta.StopReason != "" {
				d.resp.StopReason = ev.Delta.StopReason
			}
			if ev.Delta.StopSequence != nil {
				d.resp.StopSequence = *ev.Delta.StopSequence
			}
		}
		ev.Usage.mergeInto(&d.resp.Usage)
		out = append(out, Event{Type: EventMessage, StopReason: d.resp.StopReason, Usage: d.resp.Usage})
	case "message_stop":
		return out, true, nil
	case "error":
		e := &Error{Provider: "anthropic", Type: "error", Message: string(data)}
		if ev.Error != nil {
			e.Type, e.Message = ev.Error.Type, ev.Error.Message
		}
		return out, false, e
	default:
		// ping, and event types of later API versions
	}
	return out, false, nil
}

func (d *anthropicDecoder) blockStart(index int, raw json.RawMessage, out []Event) ([]Event, bool, error) {
	var cb antContentBlock
	if err := json.Unmarshal(raw, &cb); err != nil {
		return out, false, d.invalid("content_block_start %d does not parse: %v", index, err)
	}
	if index < 0 || index > 1<<16 {
		return out, false, d.invalid("content_block_start index %d", index)
	}
	for len(d.pos) <= index {
		d.pos = append(d.pos, 0)
	}
	if d.pos[index] != 0 {
		return out, false, d.invalid("content_block_start for index %d twice", index)
	}
	i := len(d.resp.Message.Content)
	d.pos[index] = i + 1
	st := &blockState{}
	b := Block{Type: cb.Type}
	switch cb.Type {
	case BlockText:
		st.buf.WriteString(cb.Text)
		if cb.Text != "" {
			out = append(out, Event{Type: EventText, Index: i, Text: cb.Text})
		}
	case BlockThinking:
		st.buf.WriteString(cb.Thinking)
		st.sig.WriteString(cb.Signature)
		if cb.Thinking != "" {
			out = append(out, Event{Type: EventThinking, Index: i, Text: cb.Thinking})
		}
	case BlockRedactedThinking:
		b.Data = cb.Data
	case BlockToolUse:
		b.ID, b.Name = cb.ID, cb.Name
		st.start = cb.Input
		out = append(out, Event{Type: EventToolUse, Index: i, ID: cb.ID, Name: cb.Name})
	default:
		st.start = append(json.RawMessage(nil), raw...)
	}
	d.resp.Message.Content = append(d.resp.Message.Content, b)
	d.states = append(d.states, st)
	return out, false, nil
}

// block finds the block the API's index names.
func (d *anthropicDecoder) block(index int) (int, *blockState, error) {
	if index < 0 || index >= len(d.pos) || d.pos[index] == 0 {
		return 0, nil, d.invalid("an event for block %d, which did not start", index)
	}
	i := d.pos[index] - 1
	return i, d.states[i], nil
}

// finalize moves block i's accumulated state into its Block.
func (d *anthropicDecoder) finalize(i int) {
	d.states[i].finalize(&d.resp.Message.Content[i])
}

// finalize moves the accumulated state into b, once.
func (st *blockState) finalize(b *Block) {
	if st.done {
		return
	}
	st.done = true
	switch b.Type {
	case BlockText:
		b.Text = st.buf.String()
	case BlockThinking:
		b.Thinking, b.Signature = st.buf.String(), st.sig.String()
	case BlockRedactedThinking:
	case BlockToolUse:
		in := st.buf.String()
		if !st.sawInput && validObject(st.start) {
			in = string(st.start) // an input given whole at the start
		}
		b.Input, b.InputComplete = toolInput(in, st.stopped)
	default:
		b.Raw = st.start
		if st.sawInput { // a server tool's input, streamed like a tool_use's
			var m map[string]json.RawMessage
			in, _ := toolInput(st.buf.String(), true)
			if json.Unmarshal(st.start, &m) == nil {
				m["input"] = in
				if raw, err := json.Marshal(m); err == nil {
					b.Raw = raw
				}
			}
		}
	}
	st.buf.Reset()
	st.sig.Reset()
}

// truncated: a stream that ended before message_stop.
func (d *anthropicDecoder) truncated() error {
	what := "message_stop"
	if !d.sawStart {
		what = "message_start"
	}
	return &Error{Provider: "anthropic", Type: ErrIncomplete, Message: "the stream ended before " + what}
}

func (d *anthropicDecoder) response() *Response {
	if !d.final {
		d.final = true
		for i := range d.states {
			d.finalize(i)
		}
		d.resp.Message.Role = RoleAssistant
		markCutOff(&d.resp)
	}
	return &d.resp
}

func (d *anthropicDecoder) invalid(format string, args ...any) error {
	return &Error{Provider: "anthropic", Type: ErrInvalidStream, Message: fmt.Sprintf(format, args...)}
}

// markCutOff applies the max_tokens rule: the last block, if a tool_use,
// was cut off (even when its input parses: an empty one would).
func markCutOff(r *Response) {
	if r.StopReason != StopMaxTokens {
		return
	}
	if n := len(r.Message.Content); n > 0 && r.Message.Content[n-1].Type == BlockToolUse {
		r.Message.Content[n-1].InputComplete = false
	}
}

// toolInput is a streamed tool input as Block.Input: "" is {}; an input
// that is not a JSON object (cut off) is {} and incomplete.
func toolInput(s string, stopped bool) (json.RawMessage, bool) {
	t := strings.TrimSpace(s)
	if t == "" {
		return json.RawMessage("{}"), stopped
	}
	if !validObject([]byte(t)) {
		return json.RawMessage("{}"), false
	}
	return json.RawMessage(t), stopped
}

// validObject reports whether b is one JSON object.
func validObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 1 && b[0] == '{' && json.Valid(b)
}

// officialHost reports whether base is the provider's own API (where a
// missing key is certainly an error; other servers may need none).
func officialHost(base, host string) bool {
	u, err := url.Parse(base)
	return err == nil && strings.EqualFold(u.Hostname(), host)
}

func retries(n int) int {
	switch {
	case n == 0:
		return DefaultMaxRetries
	case n < 0:
		return 0
	}
	return n
}
