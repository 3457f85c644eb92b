package mcpstdio

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// pipes returns the two ends of a bidirectional stdio link: what one side
// writes the other reads, as a parent and its child's stdin and stdout.
func pipes(t *testing.T) (aIn, aOut, bIn, bOut *os.File) {
	t.Helper()
	r1, w1, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r2, w2, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	return r1, w2, r2, w1
}

type echoIn struct {
	Message string `json:"message"`
}

// newServer is a go-sdk server with an echo tool that reports progress and
// logs, a prompt and a resource.
func newServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "peer", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		if tok := req.Params.GetProgressToken(); tok != nil {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "half"})
		}
		_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "echoing " + in.Message})
		roots, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return nil, nil, err
		}
		text := in.Message
		for _, r := range roots.Roots {
			text += " " + r.URI
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
	})
	s.AddResource(&mcp.Resource{URI: "file:///a.txt", Name: "a"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "file:///a.txt", Text: "contents of a"}}}, nil
	})
	return s
}

// exercise runs a session's worth of traffic over cs: list and call a tool
// (with progress, a log message and the server asking the client for its
// roots), read a resource.
func exercise(t *testing.T, cs *mcp.ClientSession, progress, logs <-chan string) {
	t.Helper()
	ctx := context.Background()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "echo" {
		t.Fatalf("tools/list: %v %+v", err, tools)
	}
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "héllo \"quoted\"\n"}}
	params.SetProgressToken("p1")
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "héllo \"quoted\"\n file:///root" {
		t.Errorf("echo = %q", got)
	}
	if got := recv(t, progress); got != "half" {
		t.Errorf("progress = %q", got)
	}
	if got := recv(t, logs); got != "echoing héllo \"quoted\"\n" {
		t.Errorf("log = %q", got)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///a.txt"})
	if err != nil || rr.Contents[0].Text != "contents of a" {
		t.Fatalf("resources/read: %v %+v", err, rr)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "nope"}); err == nil {
		t.Error("calling an unknown tool succeeded")
	}
}

func recv(t *testing.T, c <-chan string) string {
	t.Helper()
	select {
	case s := <-c:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("nothing arrived in 10 s")
		return ""
	}
}

func newClient(progress, logs chan string) *mcp.Client {
	c := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			progress <- r.Params.Message
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			logs <- r.Params.Data.(string)
		},
	})
	c.AddRoots(&mcp.Root{URI: "file:///root"})
	return c
}

// TestSessionWithGoSDKPeers runs whole sessions with this transport on one
// side and the go-sdk's own stdio transport on the other, both ways round.
func TestSessionWithGoSDKPeers(t *testing.T) {
	for _, side := range []string{"client", "server"} {
		t.Run("ours as "+side, func(t *testing.T) {
			ctx := context.Background()
			cIn, cOut, sIn, sOut := pipes(t)
			var ct, st mcp.Transport = &mcp.IOTransport{Reader: cIn, Writer: cOut}, &mcp.IOTransport{Reader: sIn, Writer: sOut}
			if side == "client" {
				ct = &Transport{Reader: cIn, Writer: cOut}
			} else {
				st = &Transport{Reader: sIn, Writer: sOut}
			}
			ss, err := newServer().Connect(ctx, st, nil)
			if err != nil {
				t.Fatal(err)
			}
			progress, logs := make(chan string, 1), make(chan string, 1)
			// The last protocol version in which a server may ask its client
			// for roots while serving a call.
			cs, err := newClient(progress, logs).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
				t.Fatal(err)
			}
			exercise(t, cs, progress, logs)
			if err := cs.Close(); err != nil {
				t.Errorf("closing the client: %v", err)
			}
			if err := ss.Wait(); err != nil && !errors.Is(err, io.EOF) {
				t.Errorf("server session ended with %v", err)
			}
		})
	}
}

// rawConn connects a Transport to pipes this test writes lines to and
// reads lines from.
func rawConn(t *testing.T, junk func([]byte)) (mcp.Connection, *os.File, *bufio.Reader) {
	t.Helper()
	return rawConnOf(t, &Transport{MaxLine: 1 << 10, Junk: junk})
}

// rawConnOf is rawConn for the Transport tr, whose Reader and Writer it sets.
func rawConnOf(t *testing.T, tr *Transport) (mcp.Connection, *os.File, *bufio.Reader) {
	t.Helper()
	in, out, drain, feed := pipes(t)
	tr.Reader, tr.Writer = in, out
	c, err := tr.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); feed.Close(); drain.Close() })
	return c, feed, bufio.NewReader(drain)
}

func read(t *testing.T, c mcp.Connection) jsonrpc.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestBatch: the messages of an incoming batch are read one by one, and the
// responses to its calls go back as one array, in the batch's order, once
// the last is written; other writes are not held back.
func TestBatch(t *testing.T) {
	c, feed, out := rawConn(t, nil)
	io.WriteString(feed, `[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"note"},{"jsonrpc":"2.0","id":"two","method":"b","params":{"x":1}}]`+"\n")
	var reqs []*jsonrpc.Request
	for range 3 {
		reqs = append(reqs, read(t, c).(*jsonrpc.Request))
	}
	if reqs[0].Method != "a" || reqs[1].IsCall() || reqs[2].ID.Raw() != "two" || string(reqs[2].Params) != `{"x":1}` {
		t.Fatalf("batch read as %+v %+v %+v", reqs[0], reqs[1], reqs[2])
	}
	ctx := context.Background()
	second, _ := jsonrpc.MakeID("two")
	if err := c.Write(ctx, &jsonrpc.Response{ID: second, Result: json.RawMessage(`"B"`)}); err != nil {
		t.Fatal(err)
	}
	if err := c.Write(ctx, &jsonrpc.Request{Method: "notifications/progress"}); err != nil {
		t.Fatal(err)
	}
	first, _ := jsonrpc.MakeID(float64(1))
	if err := c.Write(ctx, &jsonrpc.Response{ID: first, Error: &jsonrpc.Error{Code: -32601, Message: "no a"}}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"jsonrpc":"2.0","method":"notifications/progress"}`,
		`[{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no a"}},{"jsonrpc":"2.0","id":"two","result":"B"}]`,
	}
	for _, w := range want {
		line, err := out.ReadString('\n')
		if err != nil || strings.TrimSuffix(line, "\n") != w {
			t.Errorf("wrote %q (%v), want %q", line, err, w)
		}
	}
}

// TestJunkLines: with Junk set, a line that is not a JSON object or array,
// or is too long (its head), is handed to it and skipped; without, it ends the connection with an
// error, as do a message that is not JSON-RPC 2.0 and a line over the bound.
func TestJunkLines(t *testing.T) {
	var junk []string
	c, feed, _ := rawConn(t, func(l []byte) { junk = append(junk, string(l)) })
	long := `{"jsonrpc":"2.0","id":6,"result":"` + strings.Repeat("x", 100<<10) + `"}` // over MaxLine and the reader's buffer
	io.WriteString(feed, "server starting\n42\n{not json\n\n  \r\n"+long+"\n"+`{"jsonrpc":"2.0","id":7,"result":{}}`+"\r\n")
	resp := read(t, c).(*jsonrpc.Response)
	if resp.ID.Raw() != int64(7) || string(resp.Result) != "{}" || resp.Error != nil {
		t.Errorf("read %+v", resp)
	}
	if want := []string{"server starting", "42", "{not json", "(a line longer than 1024 bytes, dropped) " + long[:200]}; !reflect.DeepEqual(junk, want) {
		t.Errorf("junk = %q, want %q", junk, want)
	}
	for _, tc := range []struct{ line, want string }{
		{"server starting", "invalid character"},
		{`{"jsonrpc":"1.0","id":1,"result":1}`, `version "1.0"`},
		{`{"jsonrpc":"2.0","result":1}`, "without an ID"},
		{`{"jsonrpc":"2.0","id":{},"method":"x"}`, "invalid ID"},
		{`[]`, "empty"},
		{`{"jsonrpc":"2.0","id":1,"method":"` + strings.Repeat("x", 2000) + `"}`, "longer than 1024 bytes"},
	} {
		c, feed, _ := rawConn(t, nil)
		io.WriteString(feed, tc.line+"\n")
		_, err := c.Read(context.Background())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.40s: err = %v, want %q", tc.line, err, tc.want)
		}
	}
}

// TestReply: with Reply, a line that is not JSON is answered with Parse
// error, other JSON that is not a message (a batch's members too) and a
// line over the bound with Invalid Request, with the request's id when it
// has a method and a readable id; valid messages around them are read as
// usual, and Junk still sees the lines.
func TestReply(t *testing.T) {
	var junk []string
	c, feed, out := rawConnOf(t, &Transport{MaxLine: 1 << 10, Reply: true, Junk: func(l []byte) { junk = append(junk, string(l)) }})
	pad := strings.Repeat("a", 2000)
	lines := []string{
		`{not json`,
		`42`,
		`{"jsonrpc":"1.0","id":3,"method":"x"}`,
		`{"jsonrpc":"2.0","id":{},"method":"x"}`,
		`{"jsonrpc":"2.0","id":4,"error":"not an object"}`, // a malformed response: its id is ours
		`[]`,
		`[1,{"jsonrpc":"2.0","method":"note"}]`,
		`[{"jsonrpc":"2.0","id":8,"method":"a"},{"jsonrpc":"2.0","id":9,"method":5}]`,
		`{"jsonrpc":"2.0","id":10,"method":"ping","params":{"x":"` + pad + `"}}`,
		`{"jsonrpc":"2.0","method":"ping","params":{"x":"` + strings.Repeat("a", maxHead) + `"},"id":11}`, // its id is past the head
		`{"jsonrpc":"2.0","id":12,"method":"ping"}`,
	}
	io.WriteString(feed, strings.Join(lines, "\n")+"\n")
	for _, want := range []string{"note", "a", "ping"} {
		if m := read(t, c).(*jsonrpc.Request); m.Method != want {
			t.Fatalf("read %+v, want the request %s", m, want)
		}
	}
	eight, _ := jsonrpc.MakeID(float64(8))
	if err := c.Write(context.Background(), &jsonrpc.Response{ID: eight, Result: json.RawMessage(`"A"`)}); err != nil {
		t.Fatal(err)
	}
	invalid := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32600,"message":"Invalid Request: `
	}
	for i, want := range []string{
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the line is not JSON"}}`,
		invalid("null") + `decoding a JSON-RPC message: 42 is not a JSON object"}}`,
		invalid("3") + `decoding a JSON-RPC message: version \"1.0\", want \"2.0\""}}`,
		invalid("null") + `decoding a JSON-RPC message: parse error: invalid ID type map[string]interface {}"}}`,
		invalid("null") + `decoding a JSON-RPC error: json: cannot unmarshal string into Go value of type map[string]json.RawMessage"}}`,
		invalid("null") + `decoding a JSON-RPC batch: the batch is empty"}}`,
		`[` + invalid("null") + `decoding a JSON-RPC message: 1 is not a JSON object"}}]`,
		invalid("10") + `the message is longer than 1024 bytes"}}`,
		invalid("null") + `the message is longer than 1024 bytes"}}`,
		`[{"jsonrpc":"2.0","id":8,"result":"A"},` + invalid("9") + `decoding a JSON-RPC message's method: json: cannot unmarshal number into Go value of type string"}}]`,
	} {
		line, err := out.ReadString('\n')
		if err != nil || strings.TrimSuffix(line, "\n") != want {
			t.Errorf("answer %d = %q (%v)\nwant %q", i, line, err, want)
		}
	}
	if len(junk) != 8 || junk[0] != "{not json" || !strings.HasPrefix(junk[6], "(a line longer than 1024 bytes, dropped) ") {
		t.Errorf("junk = %.300q; want the 6 invalid lines and the 2 long ones", junk)
	}
}

// TestCloseEndsRead: Close ends a waiting Read with io.EOF and stops the
// read loop (goleak checks); the peer closing its end is io.EOF too.
func TestCloseEndsRead(t *testing.T) {
	c, _, _ := rawConn(t, nil)
	done := make(chan error)
	go func() {
		_, err := c.Read(context.Background())
		done <- err
	}()
	c.Close()
	if err := <-done; !errors.Is(err, io.EOF) {
		t.Errorf("Read after Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	c2, feed, _ := rawConn(t, nil)
	io.WriteString(feed, `{"jsonrpc":"2.0","method":"last"}`) // no newline before EOF
	feed.Close()
	if m := read(t, c2).(*jsonrpc.Request); m.Method != "last" {
		t.Errorf("read %+v", m)
	}
	if _, err := c2.Read(context.Background()); !errors.Is(err, io.EOF) {
		t.Errorf("Read at EOF: %v", err)
	}
}

// FuzzDecodeMessage: whatever the go-sdk's decoder accepts as a message
// (one JSON value), this one decodes to the same message.
func FuzzDecodeMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}`,
		`{"jsonrpc":"2.0","id":"a","result":{"content":[{"type":"text","text":"\u00e9\n"}]}}`,
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad","data":{"x":[1,2]}}}`,
		`{"jsonrpc":"2.0","id":4,"method":""}`,
		`{"jsonrpc":"2.0","id":5,"method":"a\u0062c"}`,
		`{"jsonrpc":"2.0","id":null,"method":"n","params":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want, err := jsonrpc.DecodeMessage(data)
		if err != nil || !json.Valid(data) {
			return // the go-sdk's decoder stops after the first value; its framing rejects what follows
		}
		got, err := decodeMessage(data)
		if err != nil {
			t.Fatalf("the go-sdk decodes %q, this fails: %v", data, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q decodes to %#v, the go-sdk's to %#v", data, got, want)
		}
	})
}

// BenchmarkDecodeMessage decodes the two messages of an MCP call as they
// come in: the request (on tackle mcp serve's side) and the result (on
// tackled's, from its server).
func BenchmarkDecodeMessage(b *testing.B) {
	for _, bc := range []struct{ name, line string }{
		{"request", `{"method":"tools/call","params":{"name":"ev__echo","arguments":{"message":"hello"},"_meta":{"progressToken":7}},"jsonrpc":"2.0","id":12}`},
		{"result", `{"result":{"content":[{"type":"text","text":"Echo: hello"}],"structuredContent":{"echo":"hello"}},"jsonrpc":"2.0","id":12}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			line := []byte(bc.line)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decodeMessage(line); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestDecodedMessageOwnsItsBytes: a line's buffer is reused for the next,
// so nothing decoded may point into it, on the fast path (few brackets)
// or the other.
func TestDecodedMessageOwnsItsBytes(t *testing.T) {
	deep := strings.Repeat(`[`, fastBrackets) + `"x"` + strings.Repeat(`]`, fastBrackets)
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":"r1","method":"tools/call","params":{"name":"e","arguments":{"m":"hi"}}}`,
		`{"jsonrpc":"2.0","id":"r1","method":"tools/call","params":{"name":"e","arguments":{"m":` + deep + `}}}`,
		`{"jsonrpc":"2.0","id":"r1","result":{"content":[{"type":"text","text":"hi"}]}}`,
		`{"jsonrpc":"2.0","id":"r1","result":` + deep + `}`,
	} {
		data := []byte(line)
		msg, err := decodeMessage(data)
		if err != nil {
			t.Fatal(err)
		}
		want, err := jsonrpc.DecodeMessage([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		for i := range data {
			data[i] = ' '
		}
		if !reflect.DeepEqual(msg, want) {
			t.Errorf("%s: after its buffer was overwritten the message is %#v, want %#v", line, msg, want)
		}
	}
}
