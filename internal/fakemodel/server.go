package fakemodel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Options configure a Server. A nil *Options means all defaults.
type Options struct {
	// Script answers the requests (default: none; every request that passes
	// the checks gets a 500 and is reported by Unplanned).
	Script Script
	// APIKey, when set, is the key every request must carry (Anthropic:
	// x-api-key or authorization: Bearer; openai: Bearer); others get 401.
	APIKey string
	// Models, when set, are the models the server knows; others get 404.
	Models []string
	// MergeConsecutiveRoles accepts consecutive messages of one role and
	// merges them before the other checks, as the live Anthropic API does;
	// by default they get the 400 "roles must alternate".
	MergeConsecutiveRoles bool
	// AllowNonStreaming answers "stream": false with one JSON message
	// instead of a 400 (for peers that make non-streaming side calls).
	AllowNonStreaming bool
	// Unchecked turns the API's request checks off (auth, models and
	// streaming still apply).
	Unchecked bool
	// OpenAIUsageChoices is the choices of the openai usage chunk:
	// UsageChoicesEmpty (default, OpenAI), UsageChoicesNull or
	// UsageChoicesOmitted (vLLM).
	OpenAIUsageChoices UsageChoices
	// OpenAIStopAfterToolCalls reports finish_reason "stop" after tool
	// calls in every openai turn (gpt-4o has done so).
	OpenAIStopAfterToolCalls bool
	// OpenAIInterleaveToolCalls interleaves the deltas of parallel tool
	// calls (every call's first fragment, then one argument piece of each in
	// turn) instead of streaming them one after another.
	OpenAIInterleaveToolCalls bool
	// Seed seeds the id generator (default 1): the same requests in the same
	// order get the same ids.
	Seed uint64
}

// UsageChoices is the shape of the openai usage chunk's choices.
type UsageChoices int

const (
	UsageChoicesEmpty   UsageChoices = iota // "choices":[]
	UsageChoicesNull                        // "choices":null
	UsageChoicesOmitted                     // no choices key
)

// Server is a fake model API. Build it with New and serve it with Run, or
// use Start in a test. Its methods are safe for concurrent use.
type Server struct {
	opts Options
	ids  *idGen

	mu        sync.Mutex // guards the fields below
	script    Script
	addr      string
	reqs      []*Request
	outcomes  []*Outcome // by request index; nil while answering
	unplanned []string
	changed   chan struct{} // closed and replaced on every change above
	closed    bool          // no new handlers once set
	// issued thinking: signature → thinking text; redacted data; the
	// tool_use ids of turns that began with thinking.
	signatures    map[string]string
	redacted      map[string]bool
	thinkingTurns map[string]bool

	handlers sync.WaitGroup
}

// New builds a Server. It starts nothing.
func New(opts *Options) *Server {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	o.Models = slices.Clone(o.Models)
	return &Server{
		opts:          o,
		ids:           newIDGen(o.Seed),
		script:        o.Script,
		changed:       make(chan struct{}),
		signatures:    map[string]string{},
		redacted:      map[string]bool{},
		thinkingTurns: map[string]bool{},
	}
}

// Run serves on ln until ctx ends, then closes every connection (held
// streams end as if the client went away), waits for the handlers and
// returns nil; or returns the error that stopped serving.
func (s *Server) Run(ctx context.Context, ln net.Listener) error {
	s.mu.Lock()
	s.addr = ln.Addr().String()
	s.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hs := &http.Server{
		Handler:     s,
		BaseContext: func(net.Listener) context.Context { return ctx },
		ErrorLog:    log.New(io.Discard, "", 0),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
		cancel()
	}
	hs.Close()
	if err == nil {
		<-errc
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.handlers.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// Start runs a Server on 127.0.0.1:0 for the test and stops it in
// t.Cleanup, where requests the script did not plan for fail the test.
func Start(t testing.TB, opts *Options) *Server {
	t.Helper()
	s := New(opts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listening for the fake model server: %v", err)
	}
	s.mu.Lock()
	s.addr = ln.Addr().String() // before Start returns: URL works at once
	s.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("fake model server: %v", err)
		}
		for _, u := range s.Unplanned() {
			t.Errorf("fake model server: %s", u)
		}
	})
	return s
}

// URL is the server's base URL, http://127.0.0.1:PORT ("" before Run):
// ANTHROPIC_BASE_URL. The openai base URL is URL()+"/v1".
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.addr == "" {
		return ""
	}
	return "http://" + s.addr
}

// SetScript replaces the script for the requests that arrive from now on.
func (s *Server) SetScript(sc Script) {
	s.mu.Lock()
	s.script = sc
	s.mu.Unlock()
}

// Requests are the requests captured so far, in arrival order.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

// WaitRequests waits until at least n requests have arrived and returns
// the first n, or ctx's error.
func (s *Server) WaitRequests(ctx context.Context, n int) ([]*Request, error) {
	for {
		s.mu.Lock()
		if len(s.reqs) >= n {
			out := slices.Clone(s.reqs[:n])
			s.mu.Unlock()
			return out, nil
		}
		ch := s.changed
		got := len(s.reqs)
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for request %d (%d arrived): %w", n, got, ctx.Err())
		}
	}
}

// WaitDone waits until the response to request index (from 0) has ended
// and returns what was answered, or ctx's error.
func (s *Server) WaitDone(ctx context.Context, index int) (Outcome, error) {
	for {
		s.mu.Lock()
		if index < len(s.outcomes) && s.outcomes[index] != nil {
			o := *s.outcomes[index]
			s.mu.Unlock()
			return o, nil
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return Outcome{}, fmt.Errorf("waiting for the response to request %d: %w", index, ctx.Err())
		}
	}
}

// Unplanned describes the requests the script had no turn for, and script
// panics.
func (s *Server) Unplanned() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.unplanned)
}

func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// capture records r, setting its Index.
func (s *Server) capture(r *Request) {
	s.mu.Lock()
	r.Index = len(s.reqs)
	s.reqs = append(s.reqs, r)
	s.outcomes = append(s.outcomes, nil)
	s.notifyLocked()
	s.mu.Unlock()
}

func (s *Server) finish(index int, o *Outcome) {
	s.mu.Lock()
	s.outcomes[index] = o
	s.notifyLocked()
	s.mu.Unlock()
}

// ServeHTTP serves the two APIs.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		http.Error(w, "fake model server closed", http.StatusServiceUnavailable)
		return
	}
	s.handlers.Add(1)
	s.mu.Unlock()
	defer s.handlers.Done()

	body, _ := io.ReadAll(r.Body)
	req := &Request{
		Time:   time.Now(),
		Method: r.Method,
		Path:   r.URL.Path,
		Header: r.Header.Clone(),
		Body:   body,
	}
	switch r.URL.Path {
	case "/v1/messages":
		req.Format = Anthropic
	case "/v1/chat/completions", "/chat/completions":
		req.Format = OpenAI
	}
	switch req.Format {
	case Anthropic:
		var a AnthropicRequest
		if json.Unmarshal(body, &a) == nil {
			req.Anthropic = &a
		}
	case OpenAI:
		var o OpenAIRequest
		if json.Unmarshal(body, &o) == nil {
			req.OpenAI = &o
		}
	}
	s.capture(req)
	out := &Outcome{}
	defer func() { s.finish(req.Index, out) }()

	x := &exchange{s: s, w: w, r: r, req: req, out: out}
	switch {
	case req.Format == "":
		x.fail(http.StatusNotFound, APIError{Type: "not_found_error", Message: "Not Found"}, nil)
	case r.Method != http.MethodPost:
		x.fail(http.StatusMethodNotAllowed, APIError{Type: "invalid_request_error", Message: fmt.Sprintf("Method Not Allowed: %s %s", r.Method, r.URL.Path)}, nil)
	case req.Format == Anthropic:
		s.serveAnthropic(x)
	default:
		s.serveOpenAI(x)
	}
}

// exchange is one request being answered.
type exchange struct {
	s   *Server
	w   http.ResponseWriter
	r   *http.Request
	req *Request
	out *Outcome
	// requestID is the request-id header and body's request_id.
	requestID string
}

// fail writes an error response in the request's format.
func (x *exchange) fail(status int, e APIError, header http.Header) {
	body := x.errorBody(e)
	x.failRaw(status, e.Message, body, header)
}

func (x *exchange) failRaw(status int, msg string, body []byte, header http.Header) {
	h := x.w.Header()
	for k, vs := range header {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	h.Set("content-type", "application/json")
	x.setRequestID()
	x.w.WriteHeader(status)
	x.w.Write(body)
	x.out.Status = status
	x.out.Error = msg
}

func (x *exchange) setRequestID() {
	if x.requestID == "" {
		if x.req.Format == OpenAI {
			x.requestID = x.s.ids.openAIRequest()
		} else {
			x.requestID = x.s.ids.request()
		}
	}
	if x.req.Format == OpenAI {
		x.w.Header().Set("x-request-id", x.requestID)
	} else {
		x.w.Header().Set("request-id", x.requestID)
	}
}

// errorBody is the API's error body for e.
func (x *exchange) errorBody(e APIError) []byte {
	if x.req.Format == OpenAI {
		return obj("error", openAIError(e))
	}
	x.setRequestID()
	return obj("type", "error", "error", obj("type", e.Type, "message", e.Message), "request_id", x.requestID)
}

// openAIError is e as an openai error object.
func openAIError(e APIError) json.RawMessage {
	typ := e.Type
	switch e.Type {
	case "authentication_error", "permission_error", "not_found_error", "request_too_large", "billing_error":
		typ = "invalid_request_error"
	case "rate_limit_error":
		typ = "requests"
	case "api_error", "overloaded_error", "timeout_error":
		typ = "server_error"
	}
	code := any(nil)
	if e.Code != "" {
		code = e.Code
	} else if e.Type == "rate_limit_error" {
		code = "rate_limit_exceeded"
	}
	param := any(nil)
	if e.Param != "" {
		param = e.Param
	}
	return obj("message", e.Message, "type", typ, "param", param, "code", code)
}

// apiKeys are the keys the request carries: authorization: Bearer's, and
// for Anthropic x-api-key's.
func apiKeys(r *http.Request, anthropic bool) []string {
	var keys []string
	if a := r.Header.Get("authorization"); a != "" {
		k, _ := strings.CutPrefix(a, "Bearer ")
		keys = append(keys, k)
	}
	if k := r.Header.Get("x-api-key"); anthropic && k != "" {
		keys = append(keys, k)
	}
	return keys
}

// answer asks the script for a turn and writes it.
func (s *Server) answer(x *exchange, stream func(*exchange, *Turn), whole func(*exchange, *Turn)) {
	s.mu.Lock()
	sc := s.script
	s.mu.Unlock()
	turn := s.runScript(sc, x.req)
	if turn.unplanned != "" {
		s.mu.Lock()
		s.unplanned = append(s.unplanned, turn.unplanned)
		s.mu.Unlock()
		x.fail(http.StatusInternalServerError, APIError{Type: "api_error", Message: "fakemodel: " + turn.unplanned}, nil)
		return
	}
	if turn.Status != 0 && turn.Status != http.StatusOK {
		if turn.Delay > 0 && !x.wait(turn.Delay) {
			x.out.ClientGone = true
			panic(http.ErrAbortHandler)
		}
		e := defaultError(turn.Status)
		if turn.Error != nil {
			e = *turn.Error
		}
		if turn.Body != "" {
			x.failRaw(turn.Status, e.Message, []byte(turn.Body), turn.Header)
		} else {
			x.fail(turn.Status, e, turn.Header)
		}
		x.out.Turn = &turn
		return
	}
	for _, b := range turn.Blocks {
		switch b.Type {
		case "", "text", "thinking", "redacted_thinking", "tool_use":
		default:
			s.mu.Lock()
			s.unplanned = append(s.unplanned, fmt.Sprintf("the turn for request %d has a block of unknown type %q", x.req.Index, b.Type))
			s.mu.Unlock()
			x.fail(http.StatusInternalServerError, APIError{Type: "api_error", Message: "fakemodel: unknown block type " + b.Type}, nil)
			return
		}
	}
	t := s.resolve(&turn, x.req)
	x.out.Turn = t
	if !x.streaming() && t.Raw == nil {
		whole(x, t)
		return
	}
	stream(x, t)
}

// streaming reports whether the request asked for a stream.
func (x *exchange) streaming() bool {
	switch {
	case x.req.Anthropic != nil:
		return x.req.Anthropic.Stream
	case x.req.OpenAI != nil:
		return x.req.OpenAI.Stream
	}
	return false
}

func (s *Server) runScript(sc Script, r *Request) (t Turn) {
	if sc == nil {
		return Turn{unplanned: fmt.Sprintf("request %d (%s %s) arrived but the server has no script", r.Index, r.Method, r.Path)}
	}
	defer func() {
		if p := recover(); p != nil {
			t = Turn{unplanned: fmt.Sprintf("the script panicked on request %d: %v", r.Index, p)}
		}
	}()
	return sc(r)
}

// wait waits d, or until the client goes away; it reports whether d passed.
func (x *exchange) wait(d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-x.r.Context().Done():
		return false
	}
}

// event is one SSE event: name (none for openai), data, or raw bytes
// written verbatim (a replay). kind marks what it is, for the cut point.
type event struct {
	name string
	data []byte
	raw  []byte
	kind string
}

const (
	kindDelta = "delta" // a content delta (the default cut point follows the last one)
	kindPing  = "ping"
)

// writeStream writes the 200 stream of events with t's pacing and failure,
// and records the outcome. failure is the event written at the cut for a
// StreamError (already rendered for the format).
func (x *exchange) writeStream(evs []event, t *Turn, failure func(APIError) event) {
	h := x.w.Header()
	for k, vs := range t.Header {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	h.Set("content-type", "text/event-stream; charset=utf-8")
	h.Set("cache-control", "no-cache")
	x.setRequestID()
	x.w.WriteHeader(http.StatusOK)
	x.out.Status = http.StatusOK
	rc := http.NewResponseController(x.w)
	rc.Flush()

	cut := len(evs)
	failing := t.StreamError != nil || t.Truncate || t.Abort
	if failing {
		cut = t.CutAfter
		if cut <= 0 {
			cut = defaultCut(evs)
		}
		cut = min(cut, len(evs))
	}
	ctx := x.r.Context()
	hold := func() bool {
		if t.Hold == nil || x.out.Events != t.Hold.after {
			return true
		}
		t.Hold.reach()
		select {
		case <-t.Hold.release:
			return true
		case <-ctx.Done():
			return false
		}
	}
	write := func(ev event) bool {
		if t.Delay > 0 && !x.wait(t.Delay) {
			return false
		}
		var err error
		switch {
		case ev.raw != nil:
			_, err = x.w.Write(ev.raw)
		case ev.name != "":
			_, err = fmt.Fprintf(x.w, "event: %s\ndata: %s\n\n", ev.name, ev.data)
		default:
			_, err = fmt.Fprintf(x.w, "data: %s\n\n", ev.data)
		}
		if err == nil {
			err = rc.Flush()
		}
		if err != nil {
			return false
		}
		x.out.Events++
		return hold()
	}
	// The request context ended: the client went away, or Run is
	// stopping; either way the connection is cut, never ended cleanly.
	gone := func() {
		x.out.ClientGone = true
		panic(http.ErrAbortHandler)
	}
	if !hold() {
		gone()
		return
	}
	for _, ev := range evs[:cut] {
		if !write(ev) {
			gone()
			return
		}
	}
	if t.StreamError != nil {
		x.out.Error = t.StreamError.Message
		if !write(failure(*t.StreamError)) {
			gone()
			return
		}
	}
	if t.Abort {
		panic(http.ErrAbortHandler) // net/http cuts the connection
	}
	if ctx.Err() != nil {
		x.out.ClientGone = true
	}
}

// defaultCut is the index after the last content delta.
func defaultCut(evs []event) int {
	cut := 0
	for i, ev := range evs {
		if ev.kind == kindDelta {
			cut = i + 1
		}
	}
	if cut == 0 {
		cut = min(1, len(evs))
	}
	return cut
}

// resolve copies t with its ids, signatures, model and usage filled in and
// records what it issues.
func (s *Server) resolve(in *Turn, r *Request) *Turn {
	t := *in
	t.Blocks = slices.Clone(in.Blocks)
	if t.Model == "" {
		t.Model = r.Model()
	}
	if t.Raw != nil {
		s.registerReplay(t.Raw)
		return &t
	}
	if t.ID == "" {
		if r.Format == OpenAI {
			t.ID = s.ids.completion()
		} else {
			t.ID = s.ids.message()
		}
	}
	outBytes := 0
	var toolIDs []string
	thinkingFirst := false
	for i := range t.Blocks {
		b := &t.Blocks[i]
		switch b.Type {
		case "thinking":
			if b.Signature == "" {
				b.Signature = s.ids.sign(b.Thinking)
			}
			if i == 0 {
				thinkingFirst = true
			}
			outBytes += len(b.Thinking)
		case "redacted_thinking":
			if b.Data == "" {
				b.Data = s.ids.redacted()
			}
			if i == 0 {
				thinkingFirst = true
			}
		case "tool_use":
			if b.ID == "" {
				if r.Format == OpenAI {
					b.ID = s.ids.call()
				} else {
					b.ID = s.ids.toolUse()
				}
			}
			toolIDs = append(toolIDs, b.ID)
			outBytes += len(b.Name) + len(b.Input)
		default:
			outBytes += len(b.Text)
		}
	}
	if t.StopReason == "" {
		t.StopReason = "end_turn"
		if len(toolIDs) > 0 {
			t.StopReason = "tool_use"
		}
	}
	if t.Usage.InputTokens == 0 {
		t.Usage.InputTokens = max(1, len(r.Body)/4)
	}
	if t.Usage.OutputTokens == 0 {
		t.Usage.OutputTokens = max(1, outBytes/4)
	}
	s.mu.Lock()
	for _, b := range t.Blocks {
		switch b.Type {
		case "thinking":
			s.signatures[b.Signature] = b.Thinking
		case "redacted_thinking":
			s.redacted[b.Data] = true
		}
	}
	if thinkingFirst {
		for _, id := range toolIDs {
			s.thinkingTurns[id] = true
		}
	}
	s.mu.Unlock()
	return &t
}

// registerReplay records the thinking signatures and redacted data of a
// recorded Anthropic stream as issued.
func (s *Server) registerReplay(raw []byte) {
	type delta struct {
		Type      string `json:"type"`
		Thinking  string `json:"thinking"`
		Signature string `json:"signature"`
	}
	var ev struct {
		Type         string `json:"type"`
		Index        int    `json:"index"`
		ContentBlock struct {
			Type string `json:"type"`
			ID   string `json:"id"`
			Data string `json:"data"`
		} `json:"content_block"`
		Delta delta `json:"delta"`
	}
	thinking := map[int]*strings.Builder{}
	first := map[int]string{} // index → block type
	var toolIDs []string
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range splitEvents(raw) {
		data := sseData(e)
		if data == nil || json.Unmarshal(data, &ev) != nil {
			continue
		}
		switch ev.Type {
		case "content_block_start":
			first[ev.Index] = ev.ContentBlock.Type
			switch ev.ContentBlock.Type {
			case "thinking":
				thinking[ev.Index] = &strings.Builder{}
			case "redacted_thinking":
				s.redacted[ev.ContentBlock.Data] = true
			case "tool_use":
				toolIDs = append(toolIDs, ev.ContentBlock.ID)
			}
		case "content_block_delta":
			if b := thinking[ev.Index]; b != nil {
				switch ev.Delta.Type {
				case "thinking_delta":
					b.WriteString(ev.Delta.Thinking)
				case "signature_delta":
					s.signatures[ev.Delta.Signature] = b.String()
				}
			}
		}
		ev.Delta = delta{}
	}
	if t := first[0]; t == "thinking" || t == "redacted_thinking" {
		for _, id := range toolIDs {
			s.thinkingTurns[id] = true
		}
	}
}

// splitEvents splits an SSE body into events, each with its blank line.
func splitEvents(raw []byte) [][]byte {
	var out [][]byte
	for len(raw) > 0 {
		i := strings.Index(string(raw), "\n\n")
		if i < 0 {
			out = append(out, raw)
			break
		}
		out = append(out, raw[:i+2])
		raw = raw[i+2:]
	}
	return out
}

// sseData is the data of one SSE event (its data lines joined).
func sseData(ev []byte) []byte {
	var data []string
	for _, line := range strings.Split(string(ev), "\n") {
		if d, ok := strings.CutPrefix(line, "data:"); ok {
			data = append(data, strings.TrimPrefix(d, " "))
		}
	}
	if data == nil {
		return nil
	}
	return []byte(strings.Join(data, "\n"))
}

// rawEvents are a replay's events.
func rawEvents(raw []byte) []event {
	var evs []event
	for _, e := range splitEvents(raw) {
		ev := event{raw: e}
		// a content delta: Anthropic's content_block_delta, or an openai
		// chunk with a non-empty delta (the finish chunk's is {})
		if name, ok := strings.CutPrefix(string(e), "event:"); ok {
			if strings.HasPrefix(strings.TrimSpace(name), "content_block_delta") {
				ev.kind = kindDelta
			}
		} else if strings.Contains(string(e), `"delta":{"`) {
			ev.kind = kindDelta
		}
		evs = append(evs, ev)
	}
	return evs
}
