package mcpserve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
	"github.com/tackle-agent/tackle/internal/procs"
)

// call is one tool call in flight: a RunBatch of one call on the link.
type call struct {
	id, ref string
	name    string // tackle's name of the tool
	served  string // the name the MCP client knows (for prompts)
	l       *link
	// result receives the call's result, once (buffered 1).
	result chan *tacklev1.ToolResult
	// progress receives call_progress texts; a full buffer drops them.
	progress chan string

	// guarded by bridge.mu:
	turnID       string
	cancelWanted bool // the client cancelled before the batch was accepted
	delivered    bool
}

// errLinkLost ends a call whose stream ended before its result came.
var errLinkLost = errors.New("the connection to tackled was lost before the call ended; its outcome is unknown")

// idBase makes this process's ids unique across processes; idSeq within it.
var (
	idBase = func() string {
		var b [6]byte
		rand.Read(b[:])
		return hex.EncodeToString(b[:])
	}()
	idSeq atomic.Uint64
)

// newID returns prefix followed by an id no other call of any serve
// process has (a random per-process part and a counter: no system call
// per call).
func newID(prefix string) string {
	return prefix + idBase + "-" + strconv.FormatUint(idSeq.Add(1), 10)
}

// onCaller runs f on a goroutine of b.callers and waits for it; a panic in
// f is raised again here. The go-sdk starts a goroutine for each request,
// on a small stack, and a call goes deep (the gRPC send of the batch, the
// result's conversion): growing that stack by copying was ~4 % of serve's
// CPU, and each call paid it again.
func (b *bridge) onCaller(f func()) {
	done := make(chan any, 1)
	b.callers.Go(func() {
		defer func() { done <- recover() }()
		f()
	})
	if r := <-done; r != nil {
		panic(r)
	}
}

// runCall runs one call of tool name with input (a JSON object) as a turn
// of the session and waits for its result. Progress goes to ss with token
// (none when either is nil). When ctx ends the call is cancelled in tackle
// and ctx's error returned; an error is returned too when the daemon cannot
// be reached or goes away.
func (b *bridge) runCall(ctx context.Context, ss *mcp.ServerSession, name, served, input string, token any, mcpTool bool) (*tacklev1.ToolResult, error) {
	// Two calls at once widen the process from one P (internal/procs).
	defer procs.Busy()()
	if err := b.removedErr(); err != nil {
		return nil, err
	}
	l, err := b.ensureLink(ctx, ss)
	if err != nil {
		return nil, err
	}
	c := &call{
		id: newID("mcp_"), ref: newID("ref-"), name: name, served: served, l: l,
		result: make(chan *tacklev1.ToolResult, 1), progress: make(chan string, 64),
	}
	b.mu.Lock()
	b.calls[c.id] = c
	b.refs[c.ref] = c
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.calls, c.id)
		if !c.cancelWanted {
			delete(b.refs, c.ref)
		}
		b.mu.Unlock()
	}()
	rb := &tacklev1.RunBatch{
		SessionId: b.sid, Ref: c.ref, PermissionMode: b.o.PermissionMode,
		PermissionTimeoutSeconds: uint32(b.o.PermissionTimeout / time.Second),
		Calls:                    []*tacklev1.ToolCall{{Id: c.id, Name: name, InputJson: input}},
		Direct:                   true, // the client listed every schema: no deferred tool to load first
	}
	if b.o.PermissionTimeout > 0 && rb.PermissionTimeoutSeconds == 0 {
		rb.PermissionTimeoutSeconds = 1
	}
	if err := l.st.RunBatch(rb); err != nil {
		return nil, fmt.Errorf("sending the call to tackled: %w", err)
	}
	var last float64
	notify := func(text string) {
		if ss == nil || token == nil {
			return
		}
		parts := []string{text}
		if mcpTool {
			// One line per progress notification of the server; the daemon
			// joins those that come close together into one event.
			parts = strings.Split(strings.TrimSuffix(text, "\n"), "\n")
		}
		for _, part := range parts {
			p := progressOf(part, last, mcpTool)
			last = p.Progress
			p.ProgressToken = token
			if err := ss.NotifyProgress(ctx, p); err != nil && ctx.Err() == nil {
				b.logf("sending progress of %s: %v", served, err)
			}
		}
	}
	for {
		select {
		case r := <-c.result:
			// Progress that came before the result goes first: none may
			// follow the response.
			for {
				select {
				case text := <-c.progress:
					notify(text)
					continue
				default:
				}
				return r, nil
			}
		case text := <-c.progress:
			notify(text)
		case <-l.done:
			return nil, errLinkLost
		case <-ctx.Done():
			b.cancel(c)
			return nil, ctx.Err()
		}
	}
}

// cancel cancels a call in tackle: at once when its turn is known, else
// once the batch is accepted (accepted does it).
func (b *bridge) cancel(c *call) {
	b.mu.Lock()
	turn := c.turnID
	if turn == "" {
		c.cancelWanted = true
	}
	b.mu.Unlock()
	if turn != "" {
		if err := c.l.st.Cancel(b.sid, turn, c.id); err != nil {
			b.logf("cancelling %s: %v", c.served, err)
		}
	}
}

// accepted records the turn of one of our batches, and cancels it when
// the client already gave up on it.
func (b *bridge) accepted(l *link, a *tacklev1.BatchAccepted) {
	b.mu.Lock()
	c := b.refs[a.GetRef()]
	delete(b.refs, a.GetRef())
	cancel := false
	if c != nil {
		c.turnID = a.GetTurnId()
		cancel = c.cancelWanted
	}
	b.mu.Unlock()
	if cancel {
		if err := l.st.Cancel(b.sid, a.GetTurnId(), c.id); err != nil {
			b.logf("cancelling %s: %v", c.served, err)
		}
	}
}

// deliver hands a call its result; only the first counts.
func (b *bridge) deliver(c *call, r *tacklev1.ToolResult) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c.delivered {
		return
	}
	c.delivered = true
	c.result <- r
}

// errorToolResult is a failed result of c made here, not by the daemon.
func errorToolResult(c *call, text string) *tacklev1.ToolResult {
	return &tacklev1.ToolResult{
		Id: c.id, Name: c.name, Status: "failed", IsError: true,
		Content: []*tacklev1.ContentBlock{{Type: "text", Text: text}},
	}
}

// progressRE is how tackle renders an MCP server's progress notification:
// "3/10 message", "3 message", or a number alone.
var progressRE = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)(?:/([0-9]+(?:\.[0-9]+)?))?(?: (.*))?$`)

// progressOf turns a call_progress text into a progress notification. The
// numbers of an MCP tool's progress pass through; any other text (a Bash
// line, a sub-agent's call) counts one step past last, as the message.
// Progress always increases, as MCP requires.
func progressOf(text string, last float64, mcpTool bool) *mcp.ProgressNotificationParams {
	if mcpTool {
		if m := progressRE.FindStringSubmatch(text); m != nil {
			p, _ := strconv.ParseFloat(m[1], 64)
			if p > last {
				out := &mcp.ProgressNotificationParams{Progress: p, Message: m[3]}
				if m[2] != "" {
					out.Total, _ = strconv.ParseFloat(m[2], 64)
				}
				return out
			}
		}
	}
	return &mcp.ProgressNotificationParams{Progress: last + 1, Message: text}
}

// callResult maps a tackle result to an MCP one: the content blocks, the
// structured content as the server sent it, isError.
func callResult(r *tacklev1.ToolResult) *mcp.CallToolResult {
	out := &mcp.CallToolResult{IsError: r.GetIsError(), Content: contents(r.GetContent())}
	if s := r.GetStructuredContentJson(); s != "" {
		out.StructuredContent = rawJSON(s)
	}
	if len(out.Content) == 0 {
		out.Content = []mcp.Content{&mcp.TextContent{Text: "(no content)"}}
	}
	return out
}

// errorResult is a tool result with isError and text.
func errorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

func contents(blocks []*tacklev1.ContentBlock) []mcp.Content {
	out := make([]mcp.Content, 0, len(blocks))
	for _, blk := range blocks {
		out = append(out, content(blk))
	}
	return out
}

// content maps one tackle content block (the daemon's mapping of the
// server's, for an MCP tool) to MCP's.
func content(blk *tacklev1.ContentBlock) mcp.Content {
	switch blk.GetType() {
	case "image":
		return &mcp.ImageContent{Data: blk.GetData(), MIMEType: blk.GetMimeType()}
	case "audio":
		return &mcp.AudioContent{Data: blk.GetData(), MIMEType: blk.GetMimeType()}
	case "resource":
		rc := &mcp.ResourceContents{URI: blk.GetUri(), MIMEType: blk.GetMimeType(), Text: blk.GetText()}
		if blk.GetText() == "" && len(blk.GetData()) > 0 {
			rc.Blob = blk.GetData()
		}
		return &mcp.EmbeddedResource{Resource: rc}
	case "resource_link":
		// tackle keeps a link's name and description as "name: description".
		name, desc, _ := strings.Cut(blk.GetText(), ": ")
		if name == "" {
			name = blk.GetUri()
		}
		return &mcp.ResourceLink{URI: blk.GetUri(), Name: name, Description: desc, MIMEType: blk.GetMimeType()}
	}
	return &mcp.TextContent{Text: blk.GetText()}
}

// resultText is the text of a result's text blocks.
func resultText(r *tacklev1.ToolResult) string {
	var sb strings.Builder
	for _, blk := range r.GetContent() {
		if blk.GetType() == "text" || blk.GetType() == "" {
			sb.WriteString(blk.GetText())
		}
	}
	return sb.String()
}
