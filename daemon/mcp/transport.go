package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tackle-agent/tackle/daemon/config"
	"github.com/tackle-agent/tackle/daemon/proc"
)

// process is one run of a stdio server, in its own process group.
type process struct {
	cmd    *exec.Cmd
	pid    int
	exited chan struct{} // closed once the process has exited and been reaped
	status string        // "exit status 1", "signal: killed"; set before exited closes
	stdin  *os.File      // parent's write end
	stdout *os.File      // parent's read end
}

// startProcess starts srv's command with stdin and stdout as pipes and
// stderr copied to logFile (nil: discarded). The process leads its own process group so
// that kill reaches the servers it spawns (npx → node).
func startProcess(srv *config.MCPServer, logFile io.Writer) (*process, error) {
	if srv.Command == "" {
		return nil, errors.New("no command configured")
	}
	cmd := exec.Command(srv.Command, srv.Args...)
	cmd.Env = os.Environ()
	for k, v := range srv.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if srv.Dir != "" {
		cmd.Env = append(cmd.Env, "CLAUDE_PROJECT_DIR="+srv.Dir, "TACKLE_PROJECT_DIR="+srv.Dir)
		cmd.Dir = srv.Dir
	} else if home, err := os.UserHomeDir(); err == nil {
		cmd.Dir = home
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("making stdin pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("making stdout pipe: %w", err)
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	var errR, errW *os.File
	if logFile != nil {
		if errR, errW, err = os.Pipe(); err != nil {
			inR.Close()
			inW.Close()
			outR.Close()
			outW.Close()
			return nil, fmt.Errorf("making stderr pipe: %w", err)
		}
		cmd.Stderr = errW
	}
	// Pdeathsig (the server dies with the daemon), recorded for the next
	// daemon: see package proc.
	h, err := proc.Start(cmd, "mcp", nil)
	inR.Close()
	outW.Close()
	if errW != nil {
		errW.Close()
	}
	if err != nil {
		inW.Close()
		outR.Close()
		if errR != nil {
			errR.Close()
		}
		return nil, fmt.Errorf("starting %q: %w", srv.Command, err)
	}
	if errR != nil {
		go copyLog(logFile, errR)
	}
	p := &process{cmd: cmd, pid: cmd.Process.Pid, exited: make(chan struct{}), stdin: inW, stdout: outR}
	go func() {
		err := cmd.Wait()
		if cmd.ProcessState != nil {
			p.status = cmd.ProcessState.String()
		} else if err != nil {
			p.status = err.Error()
		}
		// The leader is gone; whatever it spawned goes with it.
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		h.Release()
		close(p.exited)
	}()
	return p, nil
}

// exitStatus returns the exit status once the process has exited, waiting
// at most d for it; "" when it is still running.
func (p *process) exitStatus(d time.Duration) string {
	if p == nil {
		return ""
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return p.status
	case <-t.C:
		return ""
	}
}

// stop ends the process: stdin is closed (the polite request), then after a
// short wait the group gets SIGTERM and then SIGKILL. It returns once the
// process has been reaped.
func (p *process) stop(grace time.Duration) {
	p.stdin.Close()
	wait := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-p.exited:
			return true
		case <-t.C:
			return false
		}
	}
	if wait(grace) {
		return
	}
	_ = syscall.Kill(-p.pid, syscall.SIGTERM)
	if wait(time.Second) {
		return
	}
	_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	<-p.exited
}

// maxLine bounds one line a stdio server writes to stdout; a longer one is
// logged (its head) and skipped, as a line that is not JSON is (c.junk): a
// server printing a banner or debug output to stdout keeps working instead
// of breaking its connection.
const maxLine = 64 << 20

// callRecord collects what the HTTP layer saw during one call, handed down
// through the call's context.
type callRecord struct {
	mu    sync.Mutex
	fault error // the connection is in doubt: refused, 5xx, 400/404 (session lost)
	auth  error // 401/403
}

type callKey struct{}

func (r *callRecord) set(fault, auth error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if fault != nil && r.fault == nil {
		r.fault = fault
	}
	if auth != nil && r.auth == nil {
		r.auth = auth
	}
}

func (r *callRecord) get() (fault, auth error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fault, r.auth
}

// httpTransport adds the configured headers to every request, ties every
// request to its generation's lifetime, and records transport faults for the
// call (through the request's context) and for the generation.
type httpTransport struct {
	base    http.RoundTripper
	headers map[string]string
	g       *generation
	server  string
	oauth   bool // an OAuth handler authorises and retries 401/403 itself
}

// RoundTrip implements http.RoundTripper.
func (t *httpTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	callCtx := req.Context()
	ctx, cancel := context.WithCancel(callCtx)
	stop := context.AfterFunc(t.g.ctx, cancel)
	req = req.Clone(ctx)
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	rec, _ := callCtx.Value(callKey{}).(*callRecord)
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		stop()
		cancel()
		if callCtx.Err() == nil && t.g.ctx.Err() == nil {
			t.record(rec, fmt.Errorf("%s %s: %w", req.Method, req.URL.Redacted(), err), nil)
		}
		return nil, err
	}
	switch code := resp.StatusCode; {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		ae := &AuthError{Server: t.server, Status: resp.Status, Challenge: resp.Header.Get("WWW-Authenticate"), OAuth: t.oauth}
		if t.oauth {
			// The go-sdk authorises and retries: only a call that still
			// fails (Do) or a failed connect counts it.
			if rec != nil {
				rec.set(nil, ae)
			}
			t.g.noteAuth(ae)
		} else {
			t.record(rec, nil, ae)
		}
	case code == http.StatusBadRequest || code == http.StatusNotFound || code >= 500:
		if req.Method != http.MethodDelete {
			t.record(rec, fmt.Errorf("%s %s: %s", req.Method, req.URL.Redacted(), resp.Status), nil)
		}
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, done: func() { stop(); cancel() }}
	return resp, nil
}

func (t *httpTransport) record(rec *callRecord, fault, auth error) {
	if rec != nil {
		rec.set(fault, auth)
	}
	t.g.record(fault, auth)
}

// cancelBody releases a request's context when its body is closed.
type cancelBody struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.done)
	return err
}

// AuthError is a 401 or 403 from an HTTP server: it needs credentials tackle
// does not have yet.
type AuthError struct {
	Server    string
	Status    string // "401 Unauthorized"
	Challenge string // the WWW-Authenticate header, if any
	// OAuth says tackle authorises this server by OAuth; Cause is why
	// the last flow ended without a token ("" when none ran).
	OAuth bool
	Cause string
}

func (e *AuthError) Error() string {
	if e.OAuth {
		msg := fmt.Sprintf("MCP server %q answered %s: it needs authorisation", e.Server, e.Status)
		if e.Cause != "" {
			msg += " (" + e.Cause + ")"
		}
		return msg + fmt.Sprintf(": run `tackle mcp login %s`", e.Server)
	}
	return fmt.Sprintf("MCP server %q answered %s: it needs authentication (tackle's OAuth works with \"http\" servers, not this one: add an "+
		"Authorization header under \"headers\" in its configuration, then run `tackle mcp reconnect %s`)", e.Server, e.Status, e.Server)
}

// sseTransport keeps the legacy SSE stream, which the SDK opens with the
// Connect context, alive for the generation instead of the startup call.
type sseTransport struct {
	inner *mcpsdk.SSEClientTransport
	g     *generation
}

// Connect implements mcpsdk.Transport.
func (t *sseTransport) Connect(ctx context.Context) (mcpsdk.Connection, error) {
	stop := context.AfterFunc(ctx, t.g.cancel) // a startup timeout aborts the stream
	defer stop()
	return t.inner.Connect(t.g.ctx)
}

// slogHandler writes the go-sdk's slog records to an hclog.Logger.
type slogHandler struct {
	l     hclog.Logger
	attrs []any
	group string
}

func (h *slogHandler) Enabled(_ context.Context, lvl slog.Level) bool {
	switch {
	case lvl < slog.LevelInfo:
		return h.l.IsDebug()
	case lvl < slog.LevelWarn:
		return h.l.IsInfo()
	case lvl < slog.LevelError:
		return h.l.IsWarn()
	default:
		return h.l.IsError()
	}
}

func (h *slogHandler) Handle(_ context.Context, r slog.Record) error {
	args := append([]any(nil), h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		k := a.Key
		if h.group != "" {
			k = h.group + "." + k
		}
		args = append(args, k, a.Value.Any())
		return true
	})
	switch {
	case r.Level < slog.LevelInfo:
		h.l.Debug(r.Message, args...)
	case r.Level < slog.LevelWarn:
		h.l.Info(r.Message, args...)
	case r.Level < slog.LevelError:
		h.l.Warn(r.Message, args...)
	default:
		h.l.Error(r.Message, args...)
	}
	return nil
}

func (h *slogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	n := *h
	n.attrs = append([]any(nil), h.attrs...)
	for _, a := range as {
		k := a.Key
		if h.group != "" {
			k = h.group + "." + k
		}
		n.attrs = append(n.attrs, k, a.Value.Any())
	}
	return &n
}

func (h *slogHandler) WithGroup(name string) slog.Handler {
	n := *h
	if n.group != "" {
		name = n.group + "." + name
	}
	n.group = name
	return &n
}

// generation is one connection attempt and, when it succeeds, one live
// session: a process run or an HTTP session. A reconnect makes a new one.
type generation struct {
	ctx    context.Context // ends when the generation is closed
	cancel context.CancelFunc
	proc   *process // stdio only
	cs     *mcpsdk.ClientSession
	live   atomic.Bool // connected: faults now count against it

	once   sync.Once
	broken chan struct{} // closed when the generation is found broken
	mu     sync.Mutex
	err    error      // why it broke
	auth   *AuthError // a 401/403 seen
}

func newGeneration() *generation {
	ctx, cancel := context.WithCancel(context.Background())
	return &generation{ctx: ctx, cancel: cancel, broken: make(chan struct{})}
}

// record notes an HTTP fault or auth failure; once live, a fault breaks it.
func (g *generation) record(fault, auth error) {
	if auth != nil {
		g.mu.Lock()
		if g.auth == nil {
			g.auth, _ = auth.(*AuthError)
		}
		g.mu.Unlock()
		if g.live.Load() {
			g.breakWith(auth)
		}
	}
	if fault != nil && g.live.Load() {
		g.breakWith(fault)
	}
}

// noteAuth remembers the latest 401/403 of a generation whose OAuth handler
// retries by itself: it explains a connect that still fails.
func (g *generation) noteAuth(ae *AuthError) {
	g.mu.Lock()
	g.auth = ae
	g.mu.Unlock()
}

func (g *generation) authErr() *AuthError {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.auth
}

// breakWith marks the generation broken (first reason wins).
func (g *generation) breakWith(err error) {
	g.once.Do(func() {
		g.mu.Lock()
		g.err = err
		g.mu.Unlock()
		close(g.broken)
	})
}

func (g *generation) isBroken() bool {
	select {
	case <-g.broken:
		return true
	default:
		return false
	}
}

func (g *generation) brokenErr() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// close ends the generation: the session is closed without waiting for
// calls in flight (they fail), a process is stopped after a short grace.
func (g *generation) close(grace time.Duration) {
	g.cancel()
	if g.proc != nil {
		g.proc.stdout.Close() // in-flight calls fail at once
		g.proc.stop(grace)
	}
	if g.cs != nil {
		_ = g.cs.Close()
	}
}
