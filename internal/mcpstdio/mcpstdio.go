// Package mcpstdio is MCP's stdio transport (newline-delimited JSON-RPC) for
// the go-sdk, with its messages decoded once each. tackled uses it towards
// its stdio servers and `tackle mcp serve` towards its client.
//
// It exists for speed. The go-sdk's own transport (mcp.IOTransport) decodes
// every inbound message up to three times through a decoder that allocates a
// 32 KB buffer each time: once trying it as a batch, once as a message, once
// more for a request's method. In tackled's MCP echo benchmark that was 81 %
// of all the bytes the daemon allocated, and the garbage collector's work
// with it. Here a message is decoded once, into the go-sdk's own jsonrpc
// types, by the go-sdk's own decoder called without its buffer when the
// message has few brackets, else by encoding/json; what the go-sdk does with
// them afterwards is unchanged.
//
// Framing and batches follow the go-sdk's transport: one JSON value per line;
// a line holding an array is a batch, whose messages Read returns one by one
// and whose responses Write sends back together as one array once the last
// is written. Unlike the go-sdk, a line is the frame, of at most MaxLine
// bytes, and a line that is not JSON, not a JSON object or array, or too
// long can be handed to a Junk function and skipped instead of ending the
// connection, or, on a server's side (Reply), answered with a JSON-RPC
// error response.
//
// It must not interpret MCP itself: the go-sdk owns the protocol.
package mcpstdio

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	fastjson "github.com/segmentio/encoding/json"
)

// Transport is an mcp.Transport over a reader and a writer.
type Transport struct {
	Reader io.ReadCloser
	Writer io.WriteCloser
	// MaxLine bounds one line (message) read, in bytes; 0 means the
	// go-sdk's mcp.DefaultMaxLineLength.
	MaxLine int
	// Junk, if set, is given each non-empty line that is not JSON or not a
	// JSON object or array (a server's banner on stdout), and the head of
	// a line longer than MaxLine, and the line is skipped; otherwise such
	// a line ends the connection with an error. The slice is valid only
	// during the call.
	Junk func(line []byte)
	// Reply, if set, answers a line that is not a JSON-RPC message with
	// an error response and reads on, as JSON-RPC 2.0 asks of a server: a
	// line that is not JSON gets Parse error (-32700, id null); other
	// JSON that is not a valid message, a batch's invalid members, and a
	// line longer than MaxLine get Invalid Request (-32600), with the
	// request's id when its method and id can be read, else id null. That
	// is framing, below MCP, and the go-sdk would end the connection on
	// it. Junk, if set, still sees such lines.
	Reply bool
}

// Connect implements mcp.Transport. It starts the goroutine that reads
// lines; it ends when reading fails or the connection is closed.
func (t *Transport) Connect(context.Context) (mcp.Connection, error) {
	max := t.MaxLine
	if max <= 0 {
		max = mcp.DefaultMaxLineLength
	}
	c := &conn{
		r:        bufio.NewReaderSize(t.Reader, 64<<10),
		rc:       t.Reader,
		max:      max,
		w:        t.Writer,
		junk:     t.Junk,
		reply:    t.Reply,
		incoming: make(chan inbound),
		closed:   make(chan struct{}),
	}
	go c.readLoop()
	return c, nil
}

// inbound is what the read loop hands to Read: one message, or a batch
// (and, with Reply, the answers to its invalid members), or the error that
// ended reading.
type inbound struct {
	msg     jsonrpc.Message
	batch   []jsonrpc.Message
	invalid []*rejection
	err     error
}

type conn struct {
	r     *bufio.Reader // the read loop's alone
	line  []byte        // a line longer than r's buffer, put together
	rc    io.Closer
	max   int
	w     io.WriteCloser
	junk  func([]byte)
	reply bool

	incoming chan inbound      // unbuffered: the read loop waits for Read
	queue    []jsonrpc.Message // the rest of a batch; Read's alone

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error

	writeMu sync.Mutex // serializes writes of whole lines

	// batchMu guards batches: the incoming batch each unanswered request
	// of one arrived in (Read adds, Write resolves, concurrently).
	batchMu sync.Mutex
	batches map[jsonrpc.ID]*batch
}

// batch collects the responses to the requests of one incoming batch.
type batch struct {
	index     map[jsonrpc.ID]int // unanswered request → its response's place
	responses []*jsonrpc.Response
	invalid   []*rejection // the answers to its invalid members (Reply), sent after
}

func (c *conn) readLoop() {
	for {
		line, long, err := c.readLine()
		var in inbound
		switch t := bytes.TrimSpace(line); {
		case long:
			if c.junk != nil {
				c.junk(fmt.Appendf(nil, "(a line longer than %d bytes, dropped) %.200s", c.max, t))
			}
			if c.reply {
				c.answer(invalidRequest(headID(t), fmt.Sprintf("the message is longer than %d bytes", c.max)))
			}
		case len(t) == 0:
		case c.reply:
			in = c.decodeReplying(t)
		case c.junk != nil && t[0] != '{' && t[0] != '[':
			c.junk(t)
		default:
			if in = decodeLine(t, false); c.junk != nil && errors.As(in.err, new(*json.SyntaxError)) {
				c.junk(t)
				in = inbound{}
			}
		}
		if in.msg != nil || in.batch != nil || in.err != nil {
			if !c.deliver(in) || in.err != nil {
				return
			}
		}
		if err != nil {
			c.deliver(inbound{err: err})
			return
		}
	}
}

// decodeReplying decodes line t in Reply mode: what is not a message is
// answered here (and shown to Junk), and reading goes on.
func (c *conn) decodeReplying(t []byte) inbound {
	in := decodeLine(t, true)
	if in.err == nil {
		if in.batch == nil && len(in.invalid) > 0 {
			c.answerBatch(in.invalid) // a batch of nothing but invalid members
			in.invalid = nil
		}
		return in
	}
	if c.junk != nil {
		c.junk(t)
	}
	if !json.Valid(t) {
		c.answer(&rejection{code: jsonrpc.CodeParseError, message: "Parse error: the line is not JSON"})
	} else {
		c.answer(invalidRequest(requestID(t), in.err.Error()))
	}
	return inbound{}
}

// readLine reads one line. The slice is valid until the next call. A line
// longer than c.max is an error; with Junk or Reply set it is read to its
// end and dropped instead, and readLine returns its head (at most
// maxHead bytes) with long set.
func (c *conn) readLine() (line []byte, long bool, err error) {
	c.line = c.line[:0]
	for {
		chunk, err := c.r.ReadSlice('\n')
		if err != bufio.ErrBufferFull && len(c.line) == 0 && !long && len(chunk) <= c.max {
			return chunk, false, err // the common case: the line is in the buffer
		}
		if !long && len(c.line)+len(chunk) > c.max {
			if c.junk == nil && !c.reply {
				return nil, false, fmt.Errorf("reading a JSON-RPC message: a line is longer than %d bytes", c.max)
			}
			c.line = append(c.line, chunk...)
			c.line, long = c.line[:min(len(c.line), maxHead)], true
		}
		if !long {
			c.line = append(c.line, chunk...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return c.line, long, err
	}
}

// maxHead bounds the head of a dropped line kept for Junk and for the id
// of its answer.
const maxHead = 64 << 10

// deliver hands in to Read; it reports false once the connection is closed.
func (c *conn) deliver(in inbound) bool {
	select {
	case c.incoming <- in:
		return true
	case <-c.closed:
		return false
	}
}

// Read implements mcp.Connection. Reads are serialized by the go-sdk.
func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(c.queue) > 0 {
		next := c.queue[0]
		c.queue = c.queue[1:]
		return next, nil
	}
	var in inbound
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case in = <-c.incoming:
	case <-c.closed:
		return nil, io.EOF
	}
	if in.err != nil {
		return nil, in.err
	}
	if in.batch == nil {
		return in.msg, nil
	}
	if err := c.addBatch(in.batch, in.invalid); err != nil {
		return nil, err
	}
	c.queue = in.batch[1:]
	return in.batch[0], nil
}

// addBatch records the requests of an incoming batch, whose responses go
// back together with the answers to its invalid members; those are sent
// at once when it has no requests to wait for.
func (c *conn) addBatch(msgs []jsonrpc.Message, invalid []*rejection) error {
	var b *batch
	for _, m := range msgs {
		req, ok := m.(*jsonrpc.Request)
		if !ok || !req.IsCall() {
			continue
		}
		if b == nil {
			b = &batch{index: map[jsonrpc.ID]int{}}
		}
		if _, dup := b.index[req.ID]; dup {
			return fmt.Errorf("reading a JSON-RPC batch: request ID %v appears twice", req.ID.Raw())
		}
		b.index[req.ID] = len(b.responses)
		b.responses = append(b.responses, nil)
	}
	if b == nil {
		if len(invalid) > 0 {
			c.answerBatch(invalid)
		}
		return nil
	}
	b.invalid = invalid
	c.batchMu.Lock()
	defer c.batchMu.Unlock()
	for id := range b.index {
		if _, ok := c.batches[id]; ok {
			return fmt.Errorf("reading a JSON-RPC batch: request ID %v is already in flight", id.Raw())
		}
	}
	if c.batches == nil {
		c.batches = map[jsonrpc.ID]*batch{}
	}
	for id := range b.index {
		c.batches[id] = b
	}
	return nil
}

// resolve records resp if it answers a request of an incoming batch. It
// reports whether it did, and returns the batch once resp was the last of
// its responses.
func (c *conn) resolve(resp *jsonrpc.Response) (*batch, bool) {
	c.batchMu.Lock()
	defer c.batchMu.Unlock()
	b, ok := c.batches[resp.ID]
	if !ok {
		return nil, false
	}
	delete(c.batches, resp.ID)
	b.responses[b.index[resp.ID]] = resp
	delete(b.index, resp.ID)
	if len(b.index) > 0 {
		return nil, true
	}
	return b, true
}

// Write implements mcp.Connection: one message per line, or a completed
// batch's responses as one array. It is safe for concurrent use.
func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var data []byte
	var err error
	if resp, ok := msg.(*jsonrpc.Response); ok {
		if b, inBatch := c.resolve(resp); inBatch {
			if b == nil {
				return nil // the batch still waits for other responses
			}
			data, err = encodeBatch(b)
		}
	}
	if data == nil && err == nil {
		data, err = jsonrpc.EncodeMessage(msg)
	}
	if err != nil {
		return fmt.Errorf("encoding a JSON-RPC message: %w", err)
	}
	return c.writeLine(data)
}

func encodeBatch(b *batch) ([]byte, error) {
	buf := []byte{'['}
	for i, r := range b.responses {
		data, err := jsonrpc.EncodeMessage(r)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, data...)
	}
	for _, r := range b.invalid {
		data, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		buf = append(append(buf, ','), data...)
	}
	return append(buf, ']'), nil
}

// Close implements mcp.Connection: it closes the reader and the writer and
// ends a waiting Read with io.EOF. It is idempotent.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.closeErr = errors.Join(c.rc.Close(), c.w.Close())
	})
	return c.closeErr
}

// SessionID implements mcp.Connection: stdio has no session ID.
func (c *conn) SessionID() string { return "" }

// decodeLine decodes one line: a message, or an array of them (a batch).
// With lenient, a batch's invalid members are answered (in.invalid)
// instead of making the whole line an error.
func decodeLine(line []byte, lenient bool) inbound {
	if line[0] != '[' {
		msg, err := decodeMessage(line)
		return inbound{msg: msg, err: err}
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(line, &raws); err != nil {
		return inbound{err: fmt.Errorf("decoding a JSON-RPC batch: %w", err)}
	}
	if len(raws) == 0 {
		return inbound{err: errors.New("decoding a JSON-RPC batch: the batch is empty")}
	}
	var in inbound
	for _, raw := range raws {
		msg, err := decodeMessage(raw)
		switch {
		case err == nil:
			in.batch = append(in.batch, msg)
		case lenient:
			in.invalid = append(in.invalid, invalidRequest(requestID(raw), err.Error()))
		default:
			return inbound{err: err}
		}
	}
	return in
}

// rejection is the error response Reply sends for what is not a message.
type rejection struct {
	id      jsonrpc.ID // invalid: null
	code    int64
	message string
}

func invalidRequest(id jsonrpc.ID, why string) *rejection {
	return &rejection{id: id, code: jsonrpc.CodeInvalidRequest, message: "Invalid Request: " + why}
}

// MarshalJSON is the response's wire form. The go-sdk's encoder leaves out
// a null id, which JSON-RPC 2.0 requires in these responses.
func (r *rejection) MarshalJSON() ([]byte, error) {
	var id any
	if r.id.IsValid() {
		id = r.id.Raw()
	}
	return json.Marshal(struct {
		Version string `json:"jsonrpc"`
		ID      any    `json:"id"`
		Error   struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{Version: "2.0", ID: id, Error: struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}{r.code, r.message}})
}

// requestID is the id of raw, a JSON value that is not a valid message,
// when it is an object with a method (a request: its sender waits for
// the answer) and an id of a valid type; else the null id. The id of
// something without a method may be one of our own requests' (a
// malformed response), which an answer must not claim.
func requestID(raw []byte) jsonrpc.ID {
	var w map[string]json.RawMessage
	if json.Unmarshal(raw, &w) != nil || w["method"] == nil {
		return jsonrpc.ID{}
	}
	var v any
	if json.Unmarshal(w["id"], &v) != nil {
		return jsonrpc.ID{}
	}
	id, _ := jsonrpc.MakeID(v)
	return id
}

// headID is requestID for the head of a line too long to read: the id
// and method are found when they come before the cut (the go-sdk puts
// them first; other encoders may not).
func headID(head []byte) jsonrpc.ID {
	dec := json.NewDecoder(bytes.NewReader(head))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return jsonrpc.ID{}
	}
	var id jsonrpc.ID
	method := false
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			break
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			break // the cut, or a value too big for the head
		}
		switch key {
		case "method":
			method = true
		case "id":
			id = requestID([]byte(`{"method":"","id":` + string(v) + `}`))
		}
		if method && id.IsValid() {
			return id
		}
	}
	return jsonrpc.ID{}
}

// answer writes r as a line; a failed write is left to the go-sdk's next
// write to find.
func (c *conn) answer(r *rejection) {
	if data, err := json.Marshal(r); err == nil {
		c.writeLine(data)
	}
}

// answerBatch writes the answers to a batch as one array.
func (c *conn) answerBatch(rs []*rejection) {
	if data, err := json.Marshal(rs); err == nil {
		c.writeLine(data)
	}
}

func (c *conn) writeLine(data []byte) error {
	data = append(data, '\n')
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.w.Write(data)
	return err
}

// decodeMessage decodes one JSON-RPC 2.0 message into the go-sdk's types
// (members copied out of data; a null params or result stays "null"),
// with the go-sdk's rules: keys match exactly (encoding/json would take
// "Id" for "id" in a struct, and make a notification a call); a message
// with a method is a request (a notification without an ID), one without
// is a response and needs an ID.
func decodeMessage(data []byte) (jsonrpc.Message, error) {
	if bytes.Count(data, []byte{'['})+bytes.Count(data, []byte{'{'}) <= fastBrackets {
		if msg, ok := decodeFast(data); ok {
			return msg, nil
		}
	}
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] != '{' && json.Valid(t) {
		return nil, fmt.Errorf("decoding a JSON-RPC message: %.40s is not a JSON object", t)
	}
	var w map[string]json.RawMessage
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("decoding a JSON-RPC message: %w", err)
	}
	var version string
	var rawID any
	if err := unmarshalField(w, "jsonrpc", &version); err != nil {
		return nil, err
	}
	if version != "2.0" {
		return nil, fmt.Errorf("decoding a JSON-RPC message: version %q, want \"2.0\"", version)
	}
	if err := unmarshalField(w, "id", &rawID); err != nil {
		return nil, err
	}
	id, err := jsonrpc.MakeID(rawID)
	if err != nil {
		return nil, fmt.Errorf("decoding a JSON-RPC message: %w", err)
	}
	if m, ok := w["method"]; ok {
		method, err := decodeString(m)
		if err != nil {
			return nil, fmt.Errorf("decoding a JSON-RPC message's method: %w", err)
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: w["params"]}, nil
	}
	if !id.IsValid() {
		return nil, errors.New("decoding a JSON-RPC message: a response without an ID")
	}
	resp := &jsonrpc.Response{ID: id, Result: w["result"]}
	if e, ok := w["error"]; ok && !isNull(e) {
		var f map[string]json.RawMessage
		if err := json.Unmarshal(e, &f); err != nil {
			return nil, fmt.Errorf("decoding a JSON-RPC error: %w", err)
		}
		we := &jsonrpc.Error{Data: f["data"]}
		if err := unmarshalField(f, "code", &we.Code); err != nil {
			return nil, err
		}
		if err := unmarshalField(f, "message", &we.Message); err != nil {
			return nil, err
		}
		resp.Error = we
	}
	return resp, nil
}

// fastBrackets bounds the brackets (arrays and objects, or the characters
// in strings) of a message decodeFast decodes: its decoder's time grows with
// the square of the nesting depth.
const fastBrackets = 32

// wire is a message as decodeFast reads it: the go-sdk's own wire shape.
type wire struct {
	Version string          `json:"jsonrpc"`
	ID      any             `json:"id"`
	Method  json.RawMessage `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// decodeFast is decodeMessage for a message with few brackets, through the
// decoder the go-sdk itself uses (segmentio's, keys matched exactly, every
// member copied out of data), in a sixth of encoding/json's time
// (BenchmarkDecodeMessage). It reports
// false for whatever it does not take as it is (an error, a malformed or
// unusual message), which decodeMessage then decodes the slow way, for the
// same value or its error.
func decodeFast(data []byte) (jsonrpc.Message, bool) {
	var w wire
	rest, err := fastjson.Parse(data, &w, fastjson.DontMatchCaseInsensitiveStructFields)
	if err != nil || len(bytes.TrimLeft(rest, " \t\r\n")) != 0 || w.Version != "2.0" || len(w.Error) != 0 {
		return nil, false
	}
	id, err := jsonrpc.MakeID(w.ID)
	if err != nil {
		return nil, false
	}
	if w.Method != nil {
		method, err := decodeString(w.Method)
		if err != nil {
			return nil, false
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: w.Params}, true
	}
	if !id.IsValid() {
		return nil, false
	}
	return &jsonrpc.Response{ID: id, Result: w.Result}, true
}

// unmarshalField decodes the member key of m, if it is there, into v.
func unmarshalField(m map[string]json.RawMessage, key string, v any) error {
	raw, ok := m[key]
	if !ok {
		return nil
	}
	if s, ok := v.(*string); ok {
		str, err := decodeString(raw)
		if err != nil {
			return fmt.Errorf("decoding a JSON-RPC message's %s: %w", key, err)
		}
		*s = str
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decoding a JSON-RPC message's %s: %w", key, err)
	}
	return nil
}

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

// decodeString decodes a JSON string; one of ASCII without escapes (every
// method name in practice) is taken as it is.
func decodeString(raw json.RawMessage) (string, error) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' && plainASCII(raw[1:len(raw)-1]) {
		return string(raw[1 : len(raw)-1]), nil
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

// plainASCII reports whether b is ASCII without a backslash: inside a
// valid JSON string, bytes that stand for themselves.
func plainASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 || c == '\\' {
			return false
		}
	}
	return true
}
