package model

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// readTestdata reads testdata/name.
func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// chunksToSSE turns a *.chunks.txt recording (one data JSON a line) into
// the SSE the API sends: an event: line named after the JSON's type.
func chunksToSSE(t testing.TB, chunks []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(chunks))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var v struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(line, &v); err != nil {
			t.Fatalf("chunk %q: %v", line, err)
		}
		out.WriteString("event: " + v.Type + "\ndata: ")
		out.Write(line)
		out.WriteString("\n\n")
	}
	return out.Bytes()
}

// dataOnly is chunks as a data-only SSE body.
func dataOnly(chunks []byte) []byte {
	var out bytes.Buffer
	for _, line := range bytes.Split(chunks, []byte("\n")) {
		if len(bytes.TrimSpace(line)) > 0 {
			out.WriteString("data: ")
			out.Write(line)
			out.WriteString("\n\n")
		}
	}
	return out.Bytes()
}

// parsed is what a stream gave.
type parsed struct {
	events []Event
	resp   *Response
	err    error
}

// parse runs body through the real stream machinery (peek, Events,
// Response) without HTTP.
func parse(t testing.TB, provider string, body []byte) parsed {
	t.Helper()
	var dec decoder = &anthropicDecoder{}
	if provider == "openai" {
		dec = newOpenAIDecoder()
	}
	resp := &http.Response{StatusCode: 200, Body: nopCloser{bytes.NewReader(body)}, Header: http.Header{}}
	st := newHTTPStream(provider, context.Background(), func() {}, resp, dec)
	var p parsed
	if err := st.peek(); err != nil {
		p.err = err
		p.resp = st.Response()
		return p
	}
	for ev, err := range st.Events() {
		if err != nil {
			p.err = err
			break
		}
		p.events = append(p.events, ev)
	}
	p.resp = st.Response()
	return p
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

// count counts the events of type typ.
func count(evs []Event, typ EventType) int {
	n := 0
	for _, e := range evs {
		if e.Type == typ {
			n++
		}
	}
	return n
}

// joined concatenates the Text of the events of type typ.
func joined(evs []Event, typ EventType) string {
	var b bytes.Buffer
	for _, e := range evs {
		if e.Type == typ {
			b.WriteString(e.Text)
		}
	}
	return b.String()
}
