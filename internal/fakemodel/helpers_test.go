package fakemodel

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// httpClient is a plain client whose idle connections are closed when the
// test ends (goleak).
func httpClient(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// post sends body (marshalled unless []byte or string) with headers (pairs)
// and returns the response and its whole body.
func post(t *testing.T, url string, body any, headers ...string) (*http.Response, []byte) {
	t.Helper()
	req := newPost(t, context.Background(), url, body, headers...)
	resp, err := httpClient(t).Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the response of POST %s: %v", url, err)
	}
	return resp, b
}

func newPost(t *testing.T, ctx context.Context, url string, body any, headers ...string) *http.Request {
	t.Helper()
	var b []byte
	switch v := body.(type) {
	case []byte:
		b = v
	case string:
		b = []byte(v)
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("content-type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	return req
}

// anthropicHeaders are what a client sends (the second pair may be
// overridden by callers' pairs).
var anthropicHeaders = []string{"anthropic-version", "2023-06-01", "x-api-key", "sk-ant-test"}

// postAnthropic posts a Messages request.
func postAnthropic(t *testing.T, s *Server, body any, headers ...string) (*http.Response, []byte) {
	t.Helper()
	return post(t, s.URL()+"/v1/messages", body, append(append([]string{}, anthropicHeaders...), headers...)...)
}

// postOpenAI posts a chat completions request.
func postOpenAI(t *testing.T, s *Server, body any, headers ...string) (*http.Response, []byte) {
	t.Helper()
	return post(t, s.URL()+"/v1/chat/completions", body, append([]string{"authorization", "Bearer sk-test"}, headers...)...)
}

// msgs is a Messages request body with these messages.
func msgs(messages ...any) map[string]any {
	if messages == nil {
		messages = []any{}
	}
	return map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 1024, "stream": true, "messages": messages}
}

func user(content any) map[string]any { return map[string]any{"role": "user", "content": content} }
func assistant(content any) map[string]any {
	return map[string]any{"role": "assistant", "content": content}
}

func textBlock(s string) map[string]any { return map[string]any{"type": "text", "text": s} }
func toolUseBlock(id, name string, input any) map[string]any {
	return map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}
}
func toolResultBlock(id, content string) map[string]any {
	return map[string]any{"type": "tool_result", "tool_use_id": id, "content": content}
}

// chat is a chat completions request body.
func chat(messages ...any) map[string]any {
	if messages == nil {
		messages = []any{}
	}
	return map[string]any{"model": "gpt-4o", "stream": true, "stream_options": map[string]any{"include_usage": true}, "messages": messages}
}

func oaiMsg(role, content string) map[string]any {
	return map[string]any{"role": role, "content": content}
}
func oaiCalls(ids ...string) map[string]any {
	var calls []any
	for _, id := range ids {
		calls = append(calls, map[string]any{"id": id, "type": "function", "function": map[string]any{"name": "get_weather", "arguments": `{"city":"Paris"}`}})
	}
	return map[string]any{"role": "assistant", "content": nil, "tool_calls": calls}
}
func oaiTool(id, content string) map[string]any {
	return map[string]any{"role": "tool", "tool_call_id": id, "content": content}
}

// sse is one parsed SSE event.
type sse struct{ Event, Data string }

// parseSSE parses body strictly: each event is optional "event: X\n", then
// "data: Y\n", then a blank line; anything else fails t.
func parseSSE(t *testing.T, body []byte) []sse {
	t.Helper()
	var out []sse
	s := string(body)
	for s != "" {
		i := strings.Index(s, "\n\n")
		if i < 0 {
			t.Fatalf("stream does not end with a blank line: %q", s)
		}
		block := s[:i]
		s = s[i+2:]
		var ev sse
		lines := strings.Split(block, "\n")
		if name, ok := strings.CutPrefix(lines[0], "event: "); ok {
			ev.Event = name
			lines = lines[1:]
		}
		if len(lines) != 1 || !strings.HasPrefix(lines[0], "data: ") {
			t.Fatalf("malformed event %q", block)
		}
		ev.Data = strings.TrimPrefix(lines[0], "data: ")
		out = append(out, ev)
	}
	return out
}

func eventNames(evs []sse) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Event)
	}
	return out
}

// field decodes ev's data and returns the value at the dotted path.
func field(t *testing.T, data string, path string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(data), &v); err != nil {
		t.Fatalf("event data %q: %v", data, err)
	}
	for _, k := range strings.Split(path, ".") {
		switch m := v.(type) {
		case map[string]any:
			v = m[k]
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i >= len(m) {
				return nil
			}
			v = m[i]
		default:
			return nil
		}
	}
	return v
}

var (
	reqIDRe  = regexp.MustCompile(`^req_011C[0-9A-Za-z]{20}$`)
	msgIDRe  = regexp.MustCompile(`^msg_01[0-9A-Za-z]{22}$`)
	toolIDRe = regexp.MustCompile(`^toolu_01[0-9A-Za-z]{22}$`)
	callIDRe = regexp.MustCompile(`^call_[0-9A-Za-z]{24}$`)
	cmplIDRe = regexp.MustCompile(`^chatcmpl-[0-9A-Za-z]{29}$`)
)

// anthropicErrorBody is the exact error body the API sends.
func anthropicErrorBody(typ, msg, requestID string) string {
	return `{"type":"error","error":{"type":` + string(jsonText(typ)) + `,"message":` + string(jsonText(msg)) + `},"request_id":"` + requestID + `"}`
}

func ctxTimeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}
