// Package bridge is `tackle bridge`: tackled's gRPC API as newline-delimited
// JSON-RPC 2.0 on stdio, for editors and scripts that cannot speak gRPC
// (Lua, Vimscript, Emacs Lisp, shell). It is a thin, generic translation
// read from the proto descriptors, so every RPC is reachable and nothing
// is written by hand per method:
//
//   - a unary RPC is the method named by its gRPC full name without the
//     slash, "tackle.v1.TackleService/ListSessions"; params and result are
//     the request and response messages in protojson (camelCase names,
//     64-bit integers as strings, enums as names);
//   - the Attach stream is held by the bridge (it says Hello itself): a
//     client message is the method "attach/<field>" (subscribe, runBatch,
//     prompt, cancel, permissionAnswer, endTurn), answered {} once sent,
//     and each server message is a notification named by its field
//     (welcome, snapshot, event, batchAccepted, error);
//   - when tackled restarts, the bridge reconnects, subscribes again from
//     the last event it delivered and says so with a "reconnected"
//     notification: no event is lost or delivered twice.
//
// attach/* requests are handled in the order they arrive; unary RPCs run
// concurrently (a slow one holds up no other), so their answers may come
// back out of order: match them by id. An empty Lua table encoded as []
// where an object is expected is taken as {}. stdout carries protocol
// lines only.
package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/tackle-agent/tackle/clients/client"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
	"github.com/tackle-agent/tackle/internal/exetrim"
)

// Options configures a bridge.
type Options struct {
	// Dial connects to tackled (again, after a restart).
	Dial func(ctx context.Context) (*client.Client, error)
	// Log receives diagnostics (stderr; nil: discarded).
	Log io.Writer
}

// protoPackage is the API's package.
const protoPackage = "tackle.v1"

// method is one unary RPC.
type method struct {
	full     string // "tackle.v1.TackleService/ListSessions"
	in, out  protoreflect.MessageDescriptor
	inType   protoreflect.MessageType
	outType  protoreflect.MessageType
	comments string
}

// unary lists the unary RPCs of every service of the API, by name.
func unary() (map[string]*method, error) {
	out := map[string]*method{}
	var err error
	protoregistry.GlobalFiles.RangeFilesByPackage(protoPackage, func(fd protoreflect.FileDescriptor) bool {
		for i := 0; i < fd.Services().Len(); i++ {
			sd := fd.Services().Get(i)
			for j := 0; j < sd.Methods().Len(); j++ {
				md := sd.Methods().Get(j)
				if md.IsStreamingClient() || md.IsStreamingServer() {
					continue
				}
				m := &method{full: string(sd.FullName()) + "/" + string(md.Name()), in: md.Input(), out: md.Output()}
				if m.inType, err = protoregistry.GlobalTypes.FindMessageByName(md.Input().FullName()); err != nil {
					return false
				}
				if m.outType, err = protoregistry.GlobalTypes.FindMessageByName(md.Output().FullName()); err != nil {
					return false
				}
				out[m.full] = m
			}
		}
		return true
	})
	return out, err
}

// bridge is one running bridge.
type bridge struct {
	o       Options
	methods map[string]*method
	out     *lineWriter

	mu     sync.Mutex // guards the fields below
	c      *client.Client
	st     *client.Stream
	sub    *tacklev1.Subscribe // the last subscription, for a reconnect
	seen   map[string]uint64   // by session: the last event seq delivered
	closed bool
}

// Serve runs the bridge on in and out until in ends or ctx is done.
func Serve(ctx context.Context, o Options, in io.Reader, out io.Writer) error {
	if o.Log == nil {
		o.Log = io.Discard
	}
	ms, err := unary()
	if err != nil {
		return fmt.Errorf("reading the API's descriptors: %w", err)
	}
	b := &bridge{o: o, methods: ms, out: &lineWriter{w: out}, seen: map[string]uint64{}}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := b.connect(ctx); err != nil {
		return err
	}
	defer b.close()
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 64<<20)
	var wg sync.WaitGroup
	// One bridge runs per editor, for as long as the editor is open:
	// memory goes back to the system once no line has come or gone for a
	// check period.
	wg.Add(1)
	go func() {
		defer wg.Done()
		exetrim.WhenIdle(ctx, exetrim.IdleCheck, b.out.lines.Load, func(err error) {
			fmt.Fprintf(b.o.Log, "tackle bridge: idle: could not unmap the executable's pages: %v\n", err)
		})
	}()
	for sc.Scan() {
		b.out.lines.Add(1)
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var req request
		if err := json.Unmarshal(line, &req); err != nil || req.Method == "" {
			b.out.send(response{ID: json.RawMessage("null"), Error: &rpcError{Code: -32700, Message: "Parse error: the line is not a JSON-RPC request"}})
			continue
		}
		if strings.HasPrefix(req.Method, "attach/") {
			// The stream's messages keep the order they were sent in (a
			// subscribe before the batch that needs it).
			b.handle(ctx, req)
			continue
		}
		wg.Add(1)
		go func() { // a slow call (a prompt waiting for a person) holds up no other
			defer wg.Done()
			b.handle(ctx, req)
		}()
	}
	cancel()
	wg.Wait()
	return sc.Err()
}

// request is a JSON-RPC request (or notification, without an id).
type request struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

type notification struct {
	JSONRPC string          `json:"jsonrpc"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// lineWriter writes whole lines, one writer at a time.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
	// lines counts the lines written and read, for the idle trim.
	lines atomic.Int64
}

func (l *lineWriter) send(v any) {
	switch m := v.(type) {
	case response:
		m.JSONRPC = "2.0"
		v = m
	case notification:
		m.JSONRPC = "2.0"
		v = m
	}
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	l.lines.Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.w.Write(append(b, '\n'))
}

// handle answers one request.
func (b *bridge) handle(ctx context.Context, req request) {
	result, err := b.call(ctx, req)
	if len(req.ID) == 0 || string(req.ID) == "null" {
		return // a notification: no answer
	}
	if err != nil {
		b.out.send(response{ID: req.ID, Error: err})
		return
	}
	b.out.send(response{ID: req.ID, Result: result})
}

func (b *bridge) call(ctx context.Context, req request) (json.RawMessage, *rpcError) {
	if field, ok := strings.CutPrefix(req.Method, "attach/"); ok {
		return b.attachCall(field, req.Params)
	}
	m := b.methods[req.Method]
	if m == nil {
		return nil, &rpcError{Code: -32601, Message: "Method not found: " + req.Method + " (tackle bridge --describe lists the methods)"}
	}
	in := m.inType.New().Interface()
	if err := unmarshal(req.Params, in); err != nil {
		return nil, &rpcError{Code: -32602, Message: "Invalid params: " + err.Error()}
	}
	out := m.outType.New().Interface()
	c := b.client()
	if c == nil {
		return nil, &rpcError{Code: -32000, Message: "tackled is not connected (reconnecting)", Data: map[string]string{"grpcCode": "Unavailable"}}
	}
	if err := c.Invoke(ctx, "/"+m.full, in, out); err != nil {
		st, _ := status.FromError(err)
		return nil, &rpcError{Code: -32000, Message: st.Message(), Data: map[string]string{"grpcCode": st.Code().String()}}
	}
	res, err := protojson.MarshalOptions{EmitUnpopulated: false}.Marshal(out)
	if err != nil {
		return nil, &rpcError{Code: -32603, Message: err.Error()}
	}
	return res, nil
}

// attachCall sends a client message on the Attach stream.
func (b *bridge) attachCall(field string, params json.RawMessage) (json.RawMessage, *rpcError) {
	cm := &tacklev1.ClientMessage{}
	fd := cm.ProtoReflect().Descriptor().Fields().ByJSONName(field)
	if fd == nil || fd.ContainingOneof() == nil || fd.Message() == nil || field == "hello" {
		return nil, &rpcError{Code: -32601, Message: "Method not found: attach/" + field + " (the Attach stream takes subscribe, runBatch, prompt, cancel, permissionAnswer, endTurn)"}
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName(fd.Message().FullName())
	if err != nil {
		return nil, &rpcError{Code: -32603, Message: err.Error()}
	}
	msg := mt.New()
	if err := unmarshal(params, msg.Interface()); err != nil {
		return nil, &rpcError{Code: -32602, Message: "Invalid params: " + err.Error()}
	}
	cm.ProtoReflect().Set(fd, protoreflect.ValueOfMessage(msg))
	b.mu.Lock()
	st := b.st
	if sub := cm.GetSubscribe(); sub != nil {
		// The client's own subscription: what it asks for is delivered,
		// whatever was before.
		b.sub = proto.Clone(sub).(*tacklev1.Subscribe)
		delete(b.seen, sub.GetSessionId())
		if sub.GetFromSeq() > 0 {
			b.seen[sub.GetSessionId()] = sub.GetFromSeq() - 1
		}
	}
	b.mu.Unlock()
	if st == nil {
		return nil, &rpcError{Code: -32000, Message: "tackled is not connected (reconnecting)", Data: map[string]string{"grpcCode": "Unavailable"}}
	}
	if err := st.Send(cm); err != nil {
		return nil, &rpcError{Code: -32000, Message: err.Error(), Data: map[string]string{"grpcCode": "Unavailable"}}
	}
	return json.RawMessage("{}"), nil
}

// unmarshal reads protojson params, taking [] for {} wherever a message
// is expected (an empty Lua table), and no params as an empty message.
func unmarshal(params json.RawMessage, m proto.Message) error {
	if len(bytes.TrimSpace(params)) == 0 || string(bytes.TrimSpace(params)) == "null" {
		return nil
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(params))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return err
	}
	v = fixEmpty(v, m.ProtoReflect().Descriptor())
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return protojson.UnmarshalOptions{DiscardUnknown: false}.Unmarshal(b, m)
}

// fixEmpty turns [] into {} where md's fields expect an object.
func fixEmpty(v any, md protoreflect.MessageDescriptor) any {
	if a, ok := v.([]any); ok && len(a) == 0 {
		return map[string]any{}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return v
	}
	for k, x := range obj {
		fd := md.Fields().ByJSONName(k)
		if fd == nil {
			fd = md.Fields().ByName(protoreflect.Name(k))
		}
		if fd == nil {
			continue
		}
		switch {
		case fd.IsMap():
			if a, ok := x.([]any); ok && len(a) == 0 {
				obj[k] = map[string]any{}
			}
		case fd.IsList() && fd.Message() != nil:
			if a, ok := x.([]any); ok {
				for i := range a {
					a[i] = fixEmpty(a[i], fd.Message())
				}
			}
		case fd.Message() != nil && !isWellKnown(fd.Message()):
			obj[k] = fixEmpty(x, fd.Message())
		}
	}
	return obj
}

// isWellKnown reports the google.protobuf types protojson writes as
// scalars (a Timestamp is a string).
func isWellKnown(md protoreflect.MessageDescriptor) bool {
	return strings.HasPrefix(string(md.FullName()), "google.protobuf.")
}

func (b *bridge) client() *client.Client {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.c
}

// connect dials tackled and opens the Attach stream, whose messages go
// out as notifications; when it ends, the bridge reconnects.
func (b *bridge) connect(ctx context.Context) error {
	c, err := b.o.Dial(ctx)
	if err != nil {
		return err
	}
	st, err := c.Attach(ctx, tacklev1.Role_ROLE_CONTROLLER)
	if err != nil {
		c.Close()
		return err
	}
	b.mu.Lock()
	b.c, b.st = c, st
	b.mu.Unlock()
	b.notify("welcome", st.Welcome())
	go b.pump(ctx, st)
	return nil
}

// pump sends the stream's messages on as notifications.
func (b *bridge) pump(ctx context.Context, st *client.Stream) {
	for item := range st.Chan(ctx) {
		if item.Err != nil {
			break
		}
		m := item.Msg
		if e := m.GetEvent(); e != nil {
			b.mu.Lock()
			if e.GetSeq() <= b.seen[e.GetSessionId()] {
				b.mu.Unlock()
				continue // delivered before a reconnect
			}
			b.seen[e.GetSessionId()] = e.GetSeq()
			b.mu.Unlock()
		}
		pr := m.ProtoReflect()
		od := pr.Descriptor().Oneofs().Get(0)
		fd := pr.WhichOneof(od)
		if fd == nil || fd.Message() == nil {
			continue
		}
		b.notify(fd.JSONName(), pr.Get(fd).Message().Interface())
	}
	if ctx.Err() != nil {
		return
	}
	b.reconnect(ctx)
}

// notify sends a notification with a message as its params.
func (b *bridge) notify(name string, m proto.Message) {
	raw, err := protojson.Marshal(m)
	if err != nil {
		fmt.Fprintf(b.o.Log, "tackle bridge: encoding a %s: %v\n", name, err)
		return
	}
	b.out.send(notification{Method: name, Params: raw})
}

// reconnect dials again until tackled is back (a restart), subscribes
// again from the first event not yet delivered and says so.
func (b *bridge) reconnect(ctx context.Context) {
	b.mu.Lock()
	if b.c != nil {
		b.c.Close()
	}
	b.c, b.st = nil, nil
	b.mu.Unlock()
	b.out.send(notification{Method: "disconnected", Params: json.RawMessage(`{"reason":"the connection to tackled ended; reconnecting"}`)})
	delay := 100 * time.Millisecond
	for ctx.Err() == nil {
		if err := b.connect(ctx); err == nil {
			break
		} else {
			fmt.Fprintf(b.o.Log, "tackle bridge: reconnecting: %v\n", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(delay*2, 5*time.Second)
	}
	b.mu.Lock()
	sub, st := b.sub, b.st
	var from uint64
	if sub != nil {
		from = b.seen[sub.GetSessionId()] + 1
	}
	b.mu.Unlock()
	if sub == nil || st == nil {
		b.out.send(notification{Method: "reconnected", Params: json.RawMessage(`{}`)})
		return
	}
	re := &tacklev1.Subscribe{SessionId: sub.GetSessionId(), FromSeq: from}
	if err := st.Send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Subscribe{Subscribe: re}}); err != nil {
		fmt.Fprintf(b.o.Log, "tackle bridge: subscribing again: %v\n", err)
		return
	}
	p, _ := json.Marshal(map[string]any{"sessionId": sub.GetSessionId(), "fromSeq": fmt.Sprint(from)})
	b.out.send(notification{Method: "reconnected", Params: p})
}

func (b *bridge) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	if b.c != nil {
		b.c.Close()
	}
}

// methodNames lists the unary methods, sorted.
func methodNames(ms map[string]*method) []string {
	out := make([]string, 0, len(ms))
	for n := range ms {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
