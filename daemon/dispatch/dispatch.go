// Package dispatch is THE pipeline: every tool call of every session runs
// through it, in the order design.md describes — batching, validation,
// PreToolUse hooks, permission, handler, output handling, PostToolUse hooks —
// and every step is an event on the session's log.
//
// It owns the life of a call from "queued" to its one final result: each
// call of a turn ends with exactly one call_result, also on cancellation,
// shutdown, a panicking handler or a disconnected client. It does not know
// about gRPC or clients: the server hands it a turn and a session and
// answers permission requests through the permission.Broker.
package dispatch

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/hook"
	"github.com/tackle-agent/tackle/daemon/permission"
	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/internal/procs"
	"github.com/tackle-agent/tackle/internal/workers"
)

// Session is what the pipeline needs of a session; *session.Session
// implements it. Implementations are safe for concurrent use.
type Session interface {
	tool.Env
	// ID is the session id (the same as SessionID).
	ID() string
	// Append persists an event (assigning SessionID, Seq and Time) and publishes it.
	Append(e *event.Event) (*event.Event, error)
	// Apply runs a context modifier against the session.
	Apply(m tool.Modifier)
}

// Options configures a Dispatcher. The zero value (or nil) means defaults.
type Options struct {
	// MaxConcurrency bounds the calls of one parallel run (default 10).
	MaxConcurrency int
	// PermissionTimeout is how long an ask waits for an answer before it
	// denies, unless the turn sets its own (default 120 s).
	PermissionTimeout time.Duration
	// MaxResultChars is the default size over which output is persisted
	// (default and ceiling 50000).
	MaxResultChars int
	// CancelGrace is how long a cancelled handler may take to return before
	// its call gets a cancelled result and the handler is abandoned (default 5 s).
	CancelGrace time.Duration
	// Logger receives the pipeline's log (default: discard).
	Logger hclog.Logger
	// Rules returns the session's permission rules, read at every
	// permission decision (nil: no rules).
	Rules func(s Session) *permission.Rules
	// Audit receives every permission decision (nil: none). It is called
	// from the call's goroutine and should not block for long.
	Audit func(sessionID string, rec AuditRecord)
	// SaveAlways saves one rule approved by an allow_always answer, at scope
	// (session, project or user); nil saves nothing. It is called once per
	// rule of the decision's AlwaysRules.
	SaveAlways func(s Session, scope, rule string) (path string, err error)
	// Unloaded, if set, reports whether t is a deferred tool the session
	// has not loaded. Such a call runs when its input passes the schema
	// (and the tool is loaded through Load); when it does not, the error
	// tells the model to load the schema with ToolSearch.
	Unloaded func(sessionID string, t tool.Tool) bool
	// Load records that the session loaded the deferred tool name.
	Load func(sessionID, name string)
	// Lookup, if set, finds the tools a session has beyond the registry's
	// (its MCP servers' tools); it is asked only when the registry has no
	// tool of that name.
	Lookup func(sessionID, name string) (tool.Tool, bool)
}

// Turn is one model turn: a batch of tool calls run through the pipeline.
type Turn struct {
	// ID identifies the turn in events and Cancel; assigned if empty.
	ID string
	// ClientID is the client that submitted the turn.
	ClientID string
	// Calls are the model's tool calls, in order. An empty call id is assigned.
	Calls []event.CallInfo
	// PermissionMode is the mode for this turn. "" means ResolveMode's
	// answer, else the session's mode when the session has a
	// PermissionMode() string method, else default.
	PermissionMode string
	// ResolveMode, if set, gives the mode when PermissionMode is "". It is
	// called at most once per turn, and only when a permission decision
	// depends on the mode (not for read-only calls inside the working
	// directories).
	ResolveMode func() string
	// PermissionTimeout overrides Options.PermissionTimeout when positive.
	PermissionTimeout time.Duration
	// ResolvePermissionTimeout, if set and PermissionTimeout is not, gives
	// the timeout; it is called only when a prompt opens (it reads settings).
	ResolvePermissionTimeout func() time.Duration

	// Tools, if set, says which tools the turn may call (by canonical
	// name): a sub-agent's tool set. A call of another tool is answered as
	// one of a tool that does not exist, before any other stage.
	Tools func(name string) bool
	// ReadOnly refuses every call whose attributes are not read-only (a
	// read-only agent such as Explore: its Bash runs only read-only
	// commands), whatever the mode and rules.
	ReadOnly bool
	// AskVia, if set, is the session whose clients answer this turn's
	// permission requests (a sub-agent's root session): the request is
	// opened there and announced there too, with Agent naming the asker.
	AskVia Session
	// Agent describes the sub-agent whose turn this is, for AskVia.
	Agent *event.AgentRef
	// OnAsk, if set, is told when a permission request of the turn opens
	// (true) and when it is resolved (false).
	OnAsk func(open bool)

	// FromModel says the calls are a model's (the query loop's, a
	// sub-agent's): only a model has deferred tools to load first
	// (Options.Unloaded); a person's or an MCP client's call of one runs
	// on its input alone, and loads nothing into the model's context.
	FromModel bool

	// rules gives the session's rules, read once per turn (set by RunTurn).
	rules func() *permission.Rules
}

// RunningCall is a call that has not ended yet, for snapshots.
type RunningCall struct {
	TurnID string
	CallID string
	Tool   string
	// State is the call's current state (event.StateQueued, ...).
	State string
}

// Dispatcher runs turns. It is safe for concurrent use; any number of turns
// of any sessions may run at once.
type Dispatcher struct {
	reg    *tool.Registry
	policy permission.Policy
	broker *permission.Broker
	hooks  Hooks
	opts   Options
	log    hclog.Logger

	schemas schemaCache

	mu     sync.Mutex // guards the fields below and the state/ended fields of every callRun
	turns  map[string]*turnRun
	seq    uint64
	ended  uint64 // turns ended so far
	closed bool
	wg     sync.WaitGroup // one per running RunTurn

	// handlers runs the tools' handlers (see invoke): goroutines kept
	// between calls, whose stacks have grown already.
	handlers *workers.Pool
}

// handlerIdle is how long a handler goroutine waits for the next call
// before it ends.
const handlerIdle = 5 * time.Second

type turnRun struct {
	sessionID string
	id        string
	seq       uint64
	ctx       context.Context
	cancel    context.CancelCauseFunc
	bg        sync.WaitGroup // hooks that only observe (Notification), waited for before turn_ended
	calls     []*callRun
	byID      map[string]*callRun
	tools     func(string) bool // Turn.Tools
	fromModel bool              // Turn.FromModel
	counted   bool              // added to Dispatcher.wg
	done      chan struct{}     // closed when the turn has ended
}

type callRun struct {
	info   event.CallInfo
	ctx    context.Context
	cancel context.CancelCauseFunc
	state  string // guarded by Dispatcher.mu
	ended  bool   // guarded by Dispatcher.mu
	// tool is the call's tool once looked up (for a permission preview).
	tool tool.Tool
}

var (
	errShutdown  = errors.New("the daemon is shutting down")
	errCancelled = errors.New("cancelled by a client")
)

// interruptText is the result of a cancelled call (reference.md section 2).
const interruptText = "[Request interrupted by user for tool use]"

// shutdownText is the result of a call the daemon's stop cancelled: nobody
// interrupted it, and it may be run again.
const shutdownText = "[Request interrupted: tackled stopped during the call; run it again once the daemon is back]"

// interruption is the result text of a call ended by ctx, whose cause says
// who ended it.
func interruption(ctx context.Context) string {
	if errors.Is(context.Cause(ctx), errShutdown) {
		return shutdownText
	}
	return interruptText
}

// rejectionText is what the model gets when a person denies a call.
const rejectionText = "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file)."

// New returns a Dispatcher for the tools in reg. A nil policy is the rule
// engine (permission.NewEngine), a nil broker a fresh one, nil hooks none.
// It starts no goroutines.
func New(reg *tool.Registry, policy permission.Policy, broker *permission.Broker, hooks Hooks, opts *Options) *Dispatcher {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxConcurrency <= 0 {
		o.MaxConcurrency = 10
	}
	if o.PermissionTimeout <= 0 {
		o.PermissionTimeout = 120 * time.Second
	}
	if o.MaxResultChars <= 0 || o.MaxResultChars > hardMaxResultChars {
		o.MaxResultChars = hardMaxResultChars
	}
	if o.CancelGrace <= 0 {
		o.CancelGrace = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if reg == nil {
		reg = tool.NewRegistry()
	}
	if policy == nil {
		policy = permission.NewEngine()
	}
	if broker == nil {
		broker = permission.NewBroker()
	}
	return &Dispatcher{
		reg: reg, policy: policy, broker: broker, hooks: hooks, opts: o,
		log:      o.Logger.Named("dispatch"),
		turns:    map[string]*turnRun{},
		handlers: workers.New(handlerIdle),
	}
}

// Registry returns the tool registry the dispatcher runs.
func (d *Dispatcher) Registry() *tool.Registry { return d.reg }

// Broker returns the broker holding this dispatcher's permission requests.
func (d *Dispatcher) Broker() *permission.Broker { return d.broker }

func newID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func turnKey(sessionID, turnID string) string { return sessionID + "\x00" + turnID }

// startTurn registers a turn and creates the contexts of its calls.
func (d *Dispatcher) startTurn(ctx context.Context, sessionID string, t *Turn) *turnRun {
	d.mu.Lock()
	defer d.mu.Unlock()
	if t.ID == "" {
		t.ID = newID("turn_")
	}
	for base, n := t.ID, 2; d.turns[turnKey(sessionID, t.ID)] != nil; n++ {
		t.ID = base + "-" + strconv.Itoa(n)
	}
	tctx, cancel := context.WithCancelCause(ctx)
	d.seq++
	tr := &turnRun{sessionID: sessionID, id: t.ID, seq: d.seq, ctx: tctx, cancel: cancel, byID: map[string]*callRun{}, tools: t.Tools, fromModel: t.FromModel, done: make(chan struct{})}
	calls := make([]event.CallInfo, len(t.Calls))
	for i, c := range t.Calls {
		if c.ID == "" {
			c.ID = fmt.Sprintf("%s_call_%d", t.ID, i+1)
		}
		calls[i] = c
		if len(c.Input) > 0 && !json.Valid(c.Input) {
			// The log stores events as JSON: keep malformed input as a string.
			q, _ := json.Marshal(string(c.Input))
			calls[i].Input = q
		}
		cctx, ccancel := context.WithCancelCause(tctx)
		cr := &callRun{info: c, ctx: cctx, cancel: ccancel, state: event.StateQueued}
		tr.calls = append(tr.calls, cr)
		if _, dup := tr.byID[c.ID]; !dup {
			tr.byID[c.ID] = cr
		}
	}
	t.Calls = calls
	d.turns[turnKey(sessionID, t.ID)] = tr
	if d.closed {
		// Shutdown may be waiting already: a WaitGroup must not grow then.
		cancel(errShutdown)
	} else {
		d.wg.Add(1)
		tr.counted = true
	}
	return tr
}

func (d *Dispatcher) endTurn(tr *turnRun) {
	d.mu.Lock()
	delete(d.turns, turnKey(tr.sessionID, tr.id))
	d.ended++
	d.mu.Unlock()
	defer close(tr.done)
	for _, c := range tr.calls {
		c.cancel(nil)
	}
	tr.cancel(nil)
	if tr.counted {
		d.wg.Done()
	}
}

// Activity reports how many turns are running and how many have ended since
// the dispatcher was built, so an owner can tell when it has gone idle.
func (d *Dispatcher) Activity() (running int, ended uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.turns), d.ended
}

// RunTurn runs the calls of one turn through the pipeline and returns their
// results in call order, exactly one per call. It blocks until every call
// has ended. Cancelling ctx (or Cancel, or Shutdown) interrupts the calls
// still running or waiting; their results say so. Results are written to the
// session log even when ctx is done.
func (d *Dispatcher) RunTurn(ctx context.Context, s Session, t Turn) []*event.Result {
	if t.PermissionMode == "" {
		resolve := t.ResolveMode
		if resolve == nil {
			if m, ok := s.(interface{ PermissionMode() string }); ok {
				resolve = m.PermissionMode
			}
		}
		if resolve != nil {
			t.ResolveMode = sync.OnceValue(resolve)
		}
	}
	if d.opts.Rules != nil {
		// Settings are read at every turn (an edited file applies to the
		// next batch), but once for all the calls of the turn.
		t.rules = sync.OnceValue(func() *permission.Rules { return d.opts.Rules(s) })
	}
	// Two turns at once (clients, sessions, a sub-agent's) widen the
	// process from one P (internal/procs).
	defer procs.Busy()()
	tr := d.startTurn(ctx, s.ID(), &t)
	defer d.endTurn(tr)

	d.append(s, &event.Event{Type: event.TurnStarted, TurnID: tr.id, Turn: &event.Turn{Calls: t.Calls, ClientID: t.ClientID}})
	for _, c := range tr.calls {
		d.append(s, &event.Event{Type: event.CallState, TurnID: tr.id, CallID: c.info.ID, Tool: c.info.Name, State: event.StateQueued})
	}

	ps := d.prepare(tr)
	results := make([]*event.Result, len(ps))
	mods := make([]tool.Modifier, len(ps))
	for i := 0; i < len(ps); {
		j := i + 1
		if ps[i].safe {
			for j < len(ps) && ps[j].safe {
				j++
			}
		}
		if j-i == 1 {
			results[i], mods[i] = d.runCall(s, &t, tr, ps[i])
			d.apply(s, mods[i])
		} else {
			d.runParallel(s, &t, tr, ps[i:j], results[i:j], mods[i:j])
			for _, m := range mods[i:j] {
				d.apply(s, m)
			}
		}
		i = j
	}

	tr.bg.Wait()
	if d.hooks != nil && tr.ctx.Err() == nil && d.hooks.Has(s, hook.PostToolBatch) {
		d.postToolBatch(s, tr, ps, results)
	}
	d.append(s, &event.Event{Type: event.TurnEnded, TurnID: tr.id})
	return results
}

// postToolBatch runs the PostToolBatch hooks once for the whole turn. The
// results are final by then (their call_result events are in the log), so
// what the hooks say goes to a notice for the model's client.
func (d *Dispatcher) postToolBatch(s Session, tr *turnRun, ps []*prepared, results []*event.Result) {
	calls := make([]BatchCall, len(ps))
	for i, p := range ps {
		calls[i] = BatchCall{Call: &tool.Call{ID: p.cr.info.ID, Name: p.cr.info.Name, Input: p.cr.info.Input, Env: s}, Tool: p.cr.info.Name, Result: results[i]}
		if p.tool != nil {
			calls[i].Tool = p.tool.Spec().Name
		}
	}
	var post PostResult
	err := d.guard("PostToolBatch hook", &callRun{info: event.CallInfo{Name: "PostToolBatch"}}, func() error {
		post = d.hooks.PostToolBatch(tr.ctx, s, tr.id, calls)
		return nil
	})
	if err != nil {
		return
	}
	var parts []string
	if post.Flag {
		parts = append(parts, "PostToolBatch hook feedback: "+post.Reason)
	}
	if post.AdditionalContext != "" {
		parts = append(parts, post.AdditionalContext)
	}
	if len(parts) > 0 {
		d.append(s, &event.Event{Type: event.Notice, TurnID: tr.id, Text: strings.Join(parts, "\n")})
	}
}

func (d *Dispatcher) runParallel(s Session, t *Turn, tr *turnRun, ps []*prepared, results []*event.Result, mods []tool.Modifier) {
	sem := make(chan struct{}, d.opts.MaxConcurrency)
	var wg sync.WaitGroup
	for k, p := range ps {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			results[k], mods[k] = d.runCall(s, t, tr, p)
		}()
	}
	wg.Wait()
}

// apply runs a context modifier; a panicking modifier is logged, not fatal.
func (d *Dispatcher) apply(s Session, m tool.Modifier) {
	if m == nil {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			d.log.Error("context modifier panicked", "session", s.ID(), "panic", r, "stack", string(debug.Stack()))
		}
	}()
	s.Apply(m)
}

func (d *Dispatcher) append(s Session, e *event.Event) {
	if _, err := s.Append(e); err != nil {
		d.log.Error("appending event to session log", "session", s.ID(), "type", e.Type, "call", e.CallID, "error", err)
	}
}

func (d *Dispatcher) setState(s Session, tr *turnRun, cr *callRun, state string) {
	d.mu.Lock()
	cr.state = state
	d.mu.Unlock()
	d.append(s, &event.Event{Type: event.CallState, TurnID: tr.id, CallID: cr.info.ID, Tool: cr.info.Name, State: state})
}

// prepared is a call after lookup and schema validation, which decide batching.
type prepared struct {
	cr      *callRun
	tool    tool.Tool       // nil when invalid is set before lookup succeeded
	input   json.RawMessage // normalised, schema-valid input
	invalid string          // model-facing error when the call cannot run
	safe    bool            // schema-valid and concurrency-safe
}

// nested returns the tool.Call.Nested of the calls of turn t: a nested call
// is a turn of its own in the same session, in t's permission mode and
// with t's ask timeout, whose events go to the session's log like any
// other; cancelling the parent call cancels it.
func (d *Dispatcher) nested(s Session, t *Turn) tool.NestedFunc {
	return func(ctx context.Context, name string, input json.RawMessage) (*tool.Result, error) {
		rs := d.RunTurn(ctx, s, Turn{
			ClientID:                 t.ClientID,
			Calls:                    []event.CallInfo{{Name: name, Input: input}},
			PermissionMode:           t.PermissionMode,
			ResolveMode:              t.ResolveMode,
			PermissionTimeout:        t.PermissionTimeout,
			ResolvePermissionTimeout: t.ResolvePermissionTimeout,
		})
		if len(rs) != 1 || rs[0] == nil {
			return nil, fmt.Errorf("running %s: no result", name)
		}
		r := rs[0]
		return &tool.Result{Content: r.Content, IsError: r.IsError, Display: r.Status, Structured: r.Structured}, nil
	}
}

// lookup finds a tool by name: the registry's first, then the session's own.
func (d *Dispatcher) lookup(sessionID, name string) (tool.Tool, bool) {
	if t, ok := d.reg.Lookup(name); ok {
		return t, true
	}
	if d.opts.Lookup != nil {
		return d.opts.Lookup(sessionID, name)
	}
	return nil, false
}

func (d *Dispatcher) prepare(tr *turnRun) []*prepared {
	ps := make([]*prepared, len(tr.calls))
	for i, cr := range tr.calls {
		p := &prepared{cr: cr}
		ps[i] = p
		if tr.byID[cr.info.ID] != cr {
			p.invalid = toolUseError(fmt.Sprintf("Error: the tool_use id %q is used by an earlier call of this turn; every call needs its own id.", cr.info.ID))
			continue
		}
		t, ok := d.lookup(tr.sessionID, cr.info.Name)
		if ok && tr.tools != nil && !tr.tools(t.Spec().Name) {
			ok = false
		}
		if !ok {
			p.invalid = toolUseError("Error: No such tool available: " + cr.info.Name)
			continue
		}
		p.tool = t
		p.input, p.invalid = d.checkInput(t, cr.info.Name, cr.info.Input)
		if tr.fromModel && d.opts.Unloaded != nil && d.opts.Unloaded(tr.sessionID, t) {
			// A deferred tool the model has not loaded: it runs when its
			// input passes the schema (and is loaded from then on); else
			// the model is told to load the schema first.
			if p.invalid != "" {
				p.invalid = toolUseError(fmt.Sprintf("%s\n\n%s is a deferred tool whose schema was not loaded: load it first with ToolSearch, query \"select:%s\", then call it again.",
					strings.TrimSuffix(strings.TrimPrefix(p.invalid, "<tool_use_error>"), "</tool_use_error>"), cr.info.Name, cr.info.Name))
			} else if d.opts.Load != nil {
				d.opts.Load(tr.sessionID, t.Spec().Name)
			}
		}
		if p.invalid == "" {
			a, err := d.attributes(t, p.input)
			p.safe = err == nil && a.ConcurrencySafe
		}
	}
	return ps
}

// attributes calls t.Attributes, turning a panic into an error.
func (d *Dispatcher) attributes(t tool.Tool, input json.RawMessage) (a tool.Attributes, err error) {
	defer func() {
		if r := recover(); r != nil {
			d.log.Error("tool Attributes panicked", "tool", t.Spec().Name, "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("the tool crashed while reporting its attributes: %v", r)
		}
	}()
	return t.Attributes(input), nil
}

// guard runs f, turning a panic into an error (logged with its stack).
func (d *Dispatcher) guard(what string, cr *callRun, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			d.log.Error(what+" panicked", "tool", cr.info.Name, "call", cr.info.ID, "panic", r, "stack", string(debug.Stack()))
			err = &panicError{what: what, val: r}
		}
	}()
	return f()
}

type panicError struct {
	what string
	val  any
}

func (e *panicError) Error() string { return fmt.Sprintf("%s panicked: %v", e.what, e.val) }

// runCall takes one call from queued to its final result and appends that
// result. It returns the context modifier to apply (nil unless the handler ran).
func (d *Dispatcher) runCall(s Session, t *Turn, tr *turnRun, p *prepared) (res *event.Result, mod tool.Modifier) {
	cr := p.cr
	start := time.Now()
	name := cr.info.Name
	finish := func(status string, content []tool.Content, display string) *event.Result {
		r := &event.Result{
			CallID: cr.info.ID, Name: name, Status: status,
			IsError: status != event.StatusCompleted,
			Content: content, Display: display,
			DurationMS: time.Since(start).Milliseconds(),
		}
		return r
	}
	text := func(status, msg string) *event.Result { return finish(status, []tool.Content{tool.Text(msg)}, "") }
	defer func() {
		if r := recover(); r != nil { // a bug in the pipeline itself: the call still gets its one result
			d.log.Error("pipeline panicked", "tool", name, "call", cr.info.ID, "panic", r, "stack", string(debug.Stack()))
			res, mod = text(event.StatusFailed, fmt.Sprintf("Error: tackle failed while running %s: %v", name, r)), nil
		}
		// Only a loss of this call's own events known by now turns its
		// result into an error; one found after the result is shown
		// (the result's own commit always ends later) is told by the
		// notice of that loss, which names the call.
		if lf, ok := s.(logFailer); ok {
			if err := lf.CallLogFailure(tr.id, cr.info.ID); err != nil {
				res = logFailed(res, err)
			}
		}
		d.append(s, &event.Event{Type: event.CallResult, TurnID: tr.id, CallID: cr.info.ID, Tool: name, Result: res})
		d.mu.Lock()
		cr.ended = true
		d.mu.Unlock()
		cr.cancel(nil)
	}()
	ctx := cr.ctx
	cancelled := func() *event.Result {
		d.log.Debug("call cancelled", "tool", name, "call", cr.info.ID, "cause", context.Cause(ctx))
		return text(event.StatusCancelled, interruption(ctx))
	}

	if ctx.Err() != nil {
		return cancelled(), nil
	}
	d.setState(s, tr, cr, event.StateValidating)
	if p.invalid != "" {
		return text(event.StatusInvalid, p.invalid), nil
	}
	call := &tool.Call{ID: cr.info.ID, Name: name, Input: p.input, Env: s, Nested: d.nested(s, t)}
	cr.tool = p.tool
	if msg := d.toolValidate(ctx, p.tool, call, cr); msg != "" {
		if ctx.Err() != nil {
			return cancelled(), nil
		}
		return text(event.StatusInvalid, msg), nil
	}

	// What the call touches: PreToolUse's `if` and the permission stage match it.
	hev := ToolEvent{Env: s, TurnID: tr.id, Call: call, Tool: p.tool.Spec().Name, Mode: t.PermissionMode, ModeFunc: t.ResolveMode}
	var attrs tool.Attributes
	inspect := func() *event.Result {
		var err error
		if attrs, err = d.attributes(p.tool, call.Input); err != nil {
			return text(event.StatusFailed, fmt.Sprintf("Error: %s: %v", name, err))
		}
		err = d.guard("tool CheckPermission", cr, func() error {
			var e error
			hev.Access, e = p.tool.CheckPermission(ctx, call)
			return e
		})
		if ctx.Err() != nil {
			return cancelled()
		}
		if err != nil {
			return text(event.StatusInvalid, toolUseError(err.Error()))
		}
		return nil
	}
	if r := inspect(); r != nil {
		return r, nil
	}
	if t.ReadOnly && !attrs.ReadOnly {
		return text(event.StatusDenied, toolUseError(fmt.Sprintf("Error: this agent is read-only, and this %s call would change something: use only calls that read (for Bash, read-only commands such as ls, cat, grep, git log).", name))), nil
	}

	// PreToolUse hooks.
	var pre PreResult
	if d.hooks != nil && d.hooks.Has(s, hook.PreToolUse) {
		d.setState(s, tr, cr, event.StateHookPre)
		err := d.guard("PreToolUse hook", cr, func() error { pre = d.hooks.PreToolUse(ctx, hev); return nil })
		if ctx.Err() != nil {
			return cancelled(), nil
		}
		if err != nil {
			return text(event.StatusBlocked, fmt.Sprintf("The PreToolUse hook for %s failed (%v), so the call was blocked.", name, err)), nil
		}
		if pre.Block {
			return text(event.StatusBlocked, blockText(name, pre.Reason)), nil
		}
		if len(pre.UpdatedInput) > 0 {
			if msg := d.revalidate(ctx, p.tool, call, pre.UpdatedInput, cr); msg != "" {
				return text(event.StatusInvalid, msg), nil
			}
			if r := inspect(); r != nil {
				return r, nil
			}
		}
	}

	// Permission.
	dec := d.decide(ctx, s, t, hev, attrs, pre)
	switch dec.Verdict {
	case permission.Allow:
		d.audit(s, call, hev.Tool, string(permission.Allow), dec.By, ruleText(dec.Rule), "", "")
	case permission.Ask:
		o := d.askFirst(ctx, s, t, tr, cr, call, hev, dec)
		if ctx.Err() != nil {
			return cancelled(), nil
		}
		if o.deny != "" {
			d.permissionDenied(ctx, cr, hev, o.deny)
			return text(event.StatusDenied, o.deny), nil
		}
		if len(o.updated) > 0 {
			if msg := d.revalidate(ctx, p.tool, call, o.updated, cr); msg != "" {
				return text(event.StatusInvalid, msg), nil
			}
			if a, err := d.attributes(p.tool, call.Input); err == nil {
				attrs = a // for the result limit; the person approved this input as it is
			}
		}
	default:
		reason := denyText(hev.Tool, dec, pre)
		d.audit(s, call, hev.Tool, string(permission.Deny), dec.By, ruleText(dec.Rule), "", "")
		d.permissionDenied(ctx, cr, hev, reason)
		return text(event.StatusDenied, reason), nil
	}
	if ctx.Err() != nil {
		return cancelled(), nil
	}

	// Handler. A tool that walks directories skips what a Read deny rule
	// covers: the permission stage saw only the call's root.
	call.ReadGuard = d.readGuard(s, t)
	d.setState(s, tr, cr, event.StateRunning)
	sink := newProgressSink(func(txt string) { d.append(s, progressEvent(tr.id, cr.info.ID, name, txt)) })
	o := d.invoke(ctx, p.tool, call, cr, sink.progress)
	sink.close()
	var r *event.Result
	switch {
	case o.abandoned:
		return cancelled(), nil
	case o.panicked != nil:
		return text(event.StatusFailed, fmt.Sprintf("Error: %s crashed: %v. This is a bug in the tool; the call had no effect that tackle knows of.", name, o.panicked)), nil
	case ctx.Err() != nil && (o.err != nil || o.res == nil || o.res.IsError):
		return cancelled(), nil
	case o.err != nil:
		r = text(event.StatusFailed, "Error: "+o.err.Error())
		if o.res != nil {
			mod = o.res.Modifier
		}
	default:
		status := event.StatusCompleted
		if o.res.IsError {
			status = event.StatusFailed
		}
		content := d.shapeOutput(s, cr.info.ID, name, d.resultLimit(attrs), o.res.Content)
		r = finish(status, content, o.res.Display)
		r.Structured = o.res.Structured
		mod = o.res.Modifier
		if o.res.Warning != "" {
			d.append(s, &event.Event{Type: event.Notice, TurnID: tr.id, CallID: cr.info.ID, Tool: name, Text: o.res.Warning})
		}
	}

	if pre.AdditionalContext != "" {
		r.Content = append(r.Content, tool.Text(pre.AdditionalContext))
	}

	// PostToolUse (or PostToolUseFailure) hooks.
	ev := hook.PostToolUse
	if r.Status == event.StatusFailed {
		ev = hook.PostToolUseFailure
	}
	if d.hooks != nil && ctx.Err() == nil && d.hooks.Has(s, ev) {
		d.setState(s, tr, cr, event.StateHookPost)
		var post PostResult
		err := d.guard(ev+" hook", cr, func() error {
			if ev == hook.PostToolUse {
				post = d.hooks.PostToolUse(ctx, hev, r)
			} else {
				post = d.hooks.PostToolUseFailure(ctx, hev, r)
			}
			return nil
		})
		if err == nil {
			applyPost(r, ev, post)
		}
		r.DurationMS = time.Since(start).Milliseconds()
	}
	return r, mod
}

// logFailer is the optional method of a Session whose log can fail to be
// written (*session.Session): CallLogFailure returns why events of the
// call (of the turn) were lost, if that is known by the time it is asked.
type logFailer interface {
	CallLogFailure(turnID, callID string) error
}

// logFailed turns r into an error result saying that the session log could
// not be written: events of the call could not be stored. What the call
// returned follows the error.
func logFailed(r *event.Result, err error) *event.Result {
	c := *r
	c.Status, c.IsError = event.StatusFailed, true
	msg := fmt.Sprintf("Error: the session log could not be written (%v), so events of this call are missing from it. The call ended as %q; what it returned follows.", err, r.Status)
	c.Content = append([]tool.Content{tool.Text(msg)}, r.Content...)
	return &c
}

// applyPost changes a result as the PostToolUse hooks said: the output
// replaced, context appended as a text block, a flag made is_error.
func applyPost(r *event.Result, ev string, post PostResult) {
	if post.ReplaceOutput {
		content := []tool.Content{tool.Text(post.UpdatedOutput)}
		for _, c := range r.Content {
			if c.Type != "text" && c.Type != "" {
				content = append(content, c)
			}
		}
		r.Content = content
	}
	if post.AdditionalContext != "" {
		r.Content = append(r.Content, tool.Text(post.AdditionalContext))
	}
	if post.Flag {
		r.IsError = true
		r.Content = append(r.Content, tool.Text(ev+" hook feedback: "+post.Reason))
	}
}

// toolValidate runs the tool's own validation and returns the model-facing error.
func (d *Dispatcher) toolValidate(ctx context.Context, t tool.Tool, call *tool.Call, cr *callRun) string {
	err := d.guard("tool Validate", cr, func() error { return t.Validate(ctx, call) })
	if err == nil {
		return ""
	}
	return toolUseError(err.Error())
}

// revalidate checks an input replaced by a hook or a person, and installs it.
func (d *Dispatcher) revalidate(ctx context.Context, t tool.Tool, call *tool.Call, input json.RawMessage, cr *callRun) string {
	in, msg := d.checkInput(t, call.Name, input)
	if msg != "" {
		return msg
	}
	call.Input = in
	return d.toolValidate(ctx, t, call, cr)
}

func blockText(name, reason string) string {
	if reason == "" {
		reason = "no reason given"
	}
	return fmt.Sprintf("A PreToolUse hook blocked this call of %s: %s", name, reason)
}

// decide asks the policy about a call, with the PreToolUse hooks' decision
// and the session's rules; the policy weighs them (dispatch combines nothing).
// A verdict other than allow or ask is a deny: the pipeline fails closed.
func (d *Dispatcher) decide(ctx context.Context, s Session, t *Turn, hev ToolEvent, attrs tool.Attributes, pre PreResult) permission.Decision {
	req := permission.Request{
		Tool: hev.Tool, Mode: t.PermissionMode, ModeFunc: t.ResolveMode, Attrs: attrs, Access: hev.Access,
		Hook: permission.HookDecision{Decision: pre.Decision, Reason: pre.Reason, Hook: pre.Hook},
		Cwd:  s.Cwd(), Root: sessionRoot(s),
	}
	if d.opts.Rules != nil {
		if t.rules != nil {
			req.Rules = t.rules()
		} else {
			req.Rules = d.opts.Rules(s)
		}
	}
	if req.Rules != nil {
		// The session's directories (and its --add-dir ones), and the rules'.
		req.WorkingDirs = append(append(s.WorkingDirs(), req.Cwd), req.Rules.AdditionalDirs()...)
	}
	dec := d.policy.Decide(ctx, req)
	switch dec.Verdict {
	case permission.Allow, permission.Ask, permission.Deny:
	default:
		dec.Verdict, dec.Reason = permission.Deny, fmt.Sprintf("the permission policy answered %q, which tackle treats as a deny", dec.Verdict)
	}
	return dec
}

// readGuard is what the session's Read deny rules cover (nil: none).
func (d *Dispatcher) readGuard(s Session, t *Turn) tool.ReadGuard {
	var rules *permission.Rules
	switch {
	case t.rules != nil:
		rules = t.rules()
	case d.opts.Rules != nil:
		rules = d.opts.Rules(s)
	}
	if rules == nil {
		return nil
	}
	return rules.ReadGuard(s.Cwd(), sessionRoot(s), "")
}

// sessionRoot is the session's root directory: where its settings come from.
func sessionRoot(s Session) string {
	if r, ok := s.(interface{ Root() string }); ok {
		if root := r.Root(); root != "" {
			return root
		}
	}
	if wd := s.WorkingDirs(); len(wd) > 0 {
		return wd[0]
	}
	return s.Cwd()
}

// denyText is what the model gets for a denied call.
func denyText(canonical string, dec permission.Decision, pre PreResult) string {
	if dec.By == permission.ByHook && pre.Decision == permission.Deny {
		reason := pre.Reason
		if reason == "" {
			reason = "no reason given"
		}
		return fmt.Sprintf("Permission to use %s has been denied by a PreToolUse hook: %s", canonical, reason)
	}
	reason := strings.TrimSuffix(dec.Reason, ".")
	if reason == "" {
		reason = "the permission policy denied it"
	}
	return fmt.Sprintf("Permission to use %s has been denied: %s.", canonical, reason)
}

func ruleText(r *permission.Rule) string {
	if r == nil {
		return ""
	}
	return r.Text
}

// audit records one permission decision.
func (d *Dispatcher) audit(s Session, call *tool.Call, canonical, outcome, by, rule, scope, client string) {
	if d.opts.Audit == nil {
		return
	}
	sum := sha256.Sum256(call.Input)
	d.opts.Audit(s.ID(), AuditRecord{
		CallID: call.ID, Tool: canonical, InputSHA256: hex.EncodeToString(sum[:]),
		Outcome: outcome, DecidedBy: by, Rule: rule, Scope: scope, ClientID: client, Time: time.Now(),
	})
}

// permissionDenied runs the PermissionDenied hooks of a denied call.
func (d *Dispatcher) permissionDenied(ctx context.Context, cr *callRun, hev ToolEvent, reason string) {
	if d.hooks == nil || ctx.Err() != nil || !d.hooks.Has(hev.Env, hook.PermissionDenied) {
		return
	}
	_ = d.guard("PermissionDenied hook", cr, func() error { d.hooks.PermissionDenied(ctx, hev, reason); return nil })
}

// askFirst lets the PermissionRequest hooks answer an ask; when none does,
// it asks people.
func (d *Dispatcher) askFirst(ctx context.Context, s Session, t *Turn, tr *turnRun, cr *callRun, call *tool.Call, hev ToolEvent, dec permission.Decision) askOutcome {
	if d.hooks != nil && d.hooks.Has(s, hook.PermissionRequest) {
		var pr PermissionResult
		err := d.guard("PermissionRequest hook", cr, func() error { pr = d.hooks.PermissionRequest(ctx, hev, dec.AlwaysRule); return nil })
		if ctx.Err() != nil {
			return askOutcome{deny: interruption(ctx)}
		}
		if err == nil {
			switch pr.Decision {
			case permission.Allow:
				d.audit(s, call, hev.Tool, string(permission.Allow), permission.ByHook, "", "", "")
				return askOutcome{updated: pr.UpdatedInput}
			case permission.Deny:
				msg := pr.Message
				if msg == "" {
					msg = "no reason given"
				}
				d.audit(s, call, hev.Tool, string(permission.Deny), permission.ByHook, "", "", "")
				return askOutcome{deny: fmt.Sprintf("Permission to use %s has been denied by a PermissionRequest hook: %s", hev.Tool, msg)}
			}
		}
	}
	return d.ask(ctx, s, t, tr, cr, call, hev, dec)
}

type askOutcome struct {
	deny    string          // model-facing denial; "" = allowed
	updated json.RawMessage // input replaced by the person
}

// ask opens a permission request, waits for the first answer, the timeout
// or cancellation, and records the resolution in every case.
func (d *Dispatcher) ask(ctx context.Context, s Session, t *Turn, tr *turnRun, cr *callRun, call *tool.Call, hev ToolEvent, dec permission.Decision) askOutcome {
	timeout := t.PermissionTimeout
	if timeout <= 0 && t.ResolvePermissionTimeout != nil {
		timeout = t.ResolvePermissionTimeout()
	}
	if timeout <= 0 {
		timeout = d.opts.PermissionTimeout
	}
	req := event.PermissionRequest{
		RequestID: permission.NewRequestID(), CallID: cr.info.ID, Tool: cr.info.Name,
		Input: call.Input, Reason: dec.Reason, Deadline: time.Now().Add(timeout),
		Options: []string{permission.AllowOnce, permission.DenyAnswer}, AlwaysRule: dec.AlwaysRule,
		Preview: d.preview(ctx, cr, call),
	}
	if dec.AlwaysRule != "" {
		req.Options = []string{permission.AllowOnce, permission.AllowAlways, permission.DenyAnswer}
	}
	asker := s
	if t.AskVia != nil {
		// A sub-agent's request is its root session's: every controller
		// there sees it (late joiners too) and may answer it.
		asker = t.AskVia
		req.SessionID, req.Agent = s.ID(), t.Agent
	}
	ch, remove := d.broker.Open(asker.ID(), req)
	defer remove()
	if t.OnAsk != nil {
		t.OnAsk(true)
		defer t.OnAsk(false)
	}
	d.setState(s, tr, cr, event.StateAwaitingPermission)
	d.append(s, &event.Event{Type: event.PermissionRequested, TurnID: tr.id, CallID: cr.info.ID, Tool: cr.info.Name, Permission: &req})
	if asker != s {
		d.append(asker, &event.Event{Type: event.PermissionRequested, TurnID: tr.id, CallID: cr.info.ID, Tool: cr.info.Name, Permission: &req})
	}
	if d.hooks != nil && d.hooks.Has(s, hook.Notification) {
		// Notification hooks only observe: the prompt does not wait for them,
		// the turn does (before turn_ended), and it ends them when cancelled.
		msg := "tackle needs your permission to use " + cr.info.Name
		if dec.Reason != "" {
			msg += ": " + dec.Reason
		}
		tr.bg.Add(1)
		go func() {
			defer tr.bg.Done()
			_ = d.guard("Notification hook", cr, func() error {
				d.hooks.Notification(tr.ctx, s, tr.id, cr.info.ID, hook.NotifyPermissionPrompt, msg)
				return nil
			})
		}()
	}

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var (
		a   permission.Answer
		how string
	)
	select {
	case a = <-ch:
		how = "answered"
	case <-timer.C:
		how = "timeout"
	case <-ctx.Done():
		how = "cancelled"
	}
	if how != "answered" {
		remove()
		select { // an answer accepted just before removal wins
		case a = <-ch:
			how = "answered"
		default:
		}
	}
	res := &event.PermissionResolution{RequestID: req.RequestID}
	var out askOutcome
	switch how {
	case "answered":
		res.Decision, res.ClientID, res.Feedback = a.Decision, a.ClientID, a.Feedback
		if a.Decision == permission.DenyAnswer {
			out.deny = rejectionText + " STOP what you are doing and wait for the user to tell you how to proceed."
			if a.Feedback != "" {
				out.deny = rejectionText + " To tell you how to proceed, the user said:\n" + a.Feedback
			}
		} else {
			out.updated = a.UpdatedInput
		}
	case "timeout":
		res.Decision = "timeout"
		out.deny = fmt.Sprintf("Permission to use %s has been denied: nobody answered the permission request within %s s.",
			cr.info.Name, strconv.FormatFloat(timeout.Seconds(), 'f', -1, 64))
	default:
		res.Decision = "cancelled"
		out.deny = interruption(ctx)
	}
	by, scope := "user", ""
	switch {
	case how != "answered":
		by = res.Decision
	case a.Decision == permission.AllowAlways:
		scope, res.Rules, res.Path = d.saveAlways(s, tr, cr, a.Scope, dec)
		res.Scope = scope
	}
	d.audit(s, call, hev.Tool, res.Decision, by, strings.Join(alwaysRules(dec), ", "), scope, res.ClientID)
	d.log.Debug("permission resolved", "session", s.ID(), "call", cr.info.ID, "decision", res.Decision, "client", res.ClientID)
	d.append(s, &event.Event{Type: event.PermissionResolved, TurnID: tr.id, CallID: cr.info.ID, Tool: cr.info.Name, Resolution: res})
	if asker != s {
		d.append(asker, &event.Event{Type: event.PermissionResolved, TurnID: tr.id, CallID: cr.info.ID, Tool: cr.info.Name, Resolution: res})
	}
	return out
}

// alwaysRules are the rules an allow_always answer to dec saves.
func alwaysRules(dec permission.Decision) []string {
	if len(dec.AlwaysRules) > 0 {
		return dec.AlwaysRules
	}
	if dec.AlwaysRule != "" {
		return []string{dec.AlwaysRule}
	}
	return nil
}

// saveAlways saves the rules of an allow_always answer at scope (default
// session) and returns the scope, the rules saved and the settings file
// written ("" for the session scope). A failure is logged and told to the
// session's clients; the call is still allowed once.
func (d *Dispatcher) saveAlways(s Session, tr *turnRun, cr *callRun, scope string, dec permission.Decision) (string, []string, string) {
	if scope == "" {
		scope = permission.ScopeSession
	}
	rules := alwaysRules(dec)
	if d.opts.SaveAlways == nil || len(rules) == 0 {
		d.log.Debug("allow_always: nothing to save", "session", s.ID(), "call", cr.info.ID, "rules", rules)
		return scope, nil, ""
	}
	var saved []string
	var file string
	for _, rule := range rules {
		path, err := d.opts.SaveAlways(s, scope, rule)
		if err != nil {
			d.log.Error("saving an allow_always rule", "session", s.ID(), "scope", scope, "rule", rule, "error", err)
			d.append(s, &event.Event{Type: event.Notice, TurnID: tr.id, CallID: cr.info.ID, Tool: cr.info.Name,
				Text: fmt.Sprintf("The rule %s was allowed this once but could not be saved (%s scope): %v", rule, scope, err)})
			continue
		}
		saved, file = append(saved, rule), path
	}
	return scope, saved, file
}

type handlerOutcome struct {
	res       *tool.Result
	err       error
	panicked  any
	abandoned bool
}

// invoke runs the handler in its own goroutine, so that a handler which
// ignores cancellation is abandoned after CancelGrace instead of holding
// the turn (and Shutdown) forever.
func (d *Dispatcher) invoke(ctx context.Context, t tool.Tool, call *tool.Call, cr *callRun, progress tool.Progress) handlerOutcome {
	done := make(chan handlerOutcome, 1)
	d.handlers.Go(func() {
		var o handlerOutcome
		defer func() {
			if r := recover(); r != nil {
				d.log.Error("tool handler panicked", "tool", call.Name, "call", call.ID, "panic", r, "stack", string(debug.Stack()))
				o = handlerOutcome{panicked: r}
			}
			if o.err == nil && o.res == nil && o.panicked == nil {
				o.res = &tool.Result{}
			}
			done <- o
		}()
		o.res, o.err = t.Run(ctx, call, progress)
	})
	select {
	case o := <-done:
		return o
	case <-ctx.Done():
	}
	grace := time.NewTimer(d.opts.CancelGrace)
	defer grace.Stop()
	select {
	case o := <-done:
		return o
	case <-grace.C:
		d.log.Warn("tool handler ignored cancellation; abandoning it", "tool", call.Name, "call", call.ID, "grace", d.opts.CancelGrace)
		return handlerOutcome{abandoned: true}
	}
}

// Cancel interrupts a call of a running turn, or the whole turn when callID
// is "". A call not yet started ends as cancelled when its turn reaches it.
// It reports whether anything was cancelled (false: unknown or already ended).
func (d *Dispatcher) Cancel(sessionID, turnID, callID string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	tr := d.turns[turnKey(sessionID, turnID)]
	if tr == nil {
		return false
	}
	if callID == "" {
		tr.cancel(errCancelled)
		return true
	}
	cr := tr.byID[callID]
	if cr == nil || cr.ended {
		return false
	}
	cr.cancel(errCancelled)
	return true
}

// CancelSession cancels every turn of a session and waits until each has
// written its results and ended, or ctx ends.
func (d *Dispatcher) CancelSession(ctx context.Context, sessionID string) error {
	d.mu.Lock()
	var waits []chan struct{}
	for _, tr := range d.turns {
		if tr.sessionID == sessionID {
			tr.cancel(errCancelled)
			waits = append(waits, tr.done)
		}
	}
	d.mu.Unlock()
	for _, w := range waits {
		select {
		case <-w:
		case <-ctx.Done():
			return fmt.Errorf("waiting for the calls of session %s to end: %w", sessionID, ctx.Err())
		}
	}
	return nil
}

// Running lists the calls of a session that have not ended, with their
// state: oldest turn first, in call order.
func (d *Dispatcher) Running(sessionID string) []RunningCall {
	d.mu.Lock()
	defer d.mu.Unlock()
	var trs []*turnRun
	for _, tr := range d.turns {
		if tr.sessionID == sessionID {
			trs = append(trs, tr)
		}
	}
	sort.Slice(trs, func(i, j int) bool { return trs[i].seq < trs[j].seq })
	var out []RunningCall
	for _, tr := range trs {
		for _, c := range tr.calls {
			if !c.ended {
				out = append(out, RunningCall{TurnID: tr.id, CallID: c.info.ID, Tool: c.info.Name, State: c.state})
			}
		}
	}
	return out
}

// Shutdown cancels every turn in flight (and every later one) and waits
// until each RunTurn has written its results, or ctx ends.
func (d *Dispatcher) Shutdown(ctx context.Context) {
	d.mu.Lock()
	d.closed = true
	for _, tr := range d.turns {
		tr.cancel(errShutdown)
	}
	d.mu.Unlock()
	done := make(chan struct{})
	go func() { d.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		d.log.Warn("shutdown: turns still running when the deadline passed")
	}
	d.handlers.Close()
}
