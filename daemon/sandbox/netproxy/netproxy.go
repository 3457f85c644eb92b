// Package netproxy owns the network way out of the sandbox: a per-session
// proxy that a sandboxed command (which has no network of its own) reaches
// on 127.0.0.1. tackled makes the proxy's listening socket inside the
// session's network namespace itself (see daemon/sandboxnet.go); Bridge is
// the other way, for a command whose namespace the daemon cannot enter: a
// helper inside it turns 127.0.0.1:PORT into the proxy's unix socket, as
// Claude Code's sandbox-runtime does with socat. Either way HTTP_PROXY and
// ALL_PROXY (Env) work for curl, pip, npm and git.
//
// The proxy speaks HTTP CONNECT, plain HTTP proxy requests (absolute-form)
// and SOCKS5 on every listener it serves, telling them apart by the first
// byte. It asks a Decider about every connection and every plain HTTP
// request, and caches no answer: remembering what a person allowed is the
// Decider's business. It does not read settings, ask anyone, or match
// domains itself; MatchDomain is the helper the daemon's Decider uses.
//
// It must not resolve names before the Decider has seen them: the name the
// Decider allows is the name dialled.
package netproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Verdict is a Decider's answer about one connection.
type Verdict struct {
	// Allow lets the connection through.
	Allow bool
	// Reason says why; for a refusal it is shown to the client, as in
	// "blocked by the sandbox: domain HOST (REASON)". Keep it one line.
	Reason string
}

// Decider decides whether a sandboxed command may connect to host:port.
// host is normalised (lower-case, no trailing dot, no IPv6 brackets); an
// IP literal is passed as the client gave it (lower-cased), so refusing
// loopback, link-local or IPv4-mapped IPv6 addresses is the Decider's job.
// It is called concurrently, once for each CONNECT, each SOCKS connect and
// each plain HTTP request, and may block (to ask a person); ctx ends when
// the client goes away or the Server is closed, and the Decider should
// return soon after.
type Decider func(ctx context.Context, host string, port int) Verdict

// Options configures a Server.
type Options struct {
	// Decide is asked about every connection (required).
	Decide Decider
	// Dial opens connections to allowed targets, with addr a host:port
	// exactly as decided (nil: a net.Dialer with a 30 s timeout).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Logger receives debug logs of decisions and errors (nil: discard).
	Logger hclog.Logger
	// OnBlocked, if set, is called for each refusal, on the connection's
	// goroutine before the client is told; it must not block.
	OnBlocked func(host string, port int, reason string)
	// IdleTimeout closes a tunnel with no traffic either way, or a
	// keep-alive connection with no request, after this long (0: 10 min;
	// negative: never).
	IdleTimeout time.Duration
}

const (
	defaultIdleTimeout = 10 * time.Minute
	dialTimeout        = 30 * time.Second
	// handshakeTimeout bounds reading a request's headers or a SOCKS
	// handshake; waiting for the Decider is not bounded.
	handshakeTimeout = 30 * time.Second
	socksVersion     = 0x05
)

// ErrServerClosed is returned by Serve after Close.
var ErrServerClosed = errors.New("netproxy: server closed")

// Server is the proxy of one session. It is safe for concurrent use: Serve
// may be called for several listeners (the daemon's HTTP and SOCKS unix
// sockets), each of which accepts all three protocols.
type Server struct {
	opts   Options
	log    hclog.Logger
	ctx    context.Context // the base of every Decide and request; ended by Close
	cancel context.CancelFunc

	http      *http.Server
	httpLn    *connListener // hands sniffed HTTP connections to http
	proxy     *httputil.ReverseProxy
	transport *http.Transport

	// mu guards the fields below.
	mu          sync.Mutex
	closed      bool
	httpStarted bool
	listeners   map[net.Listener]struct{}
	conns       map[*conn]struct{} // every client and upstream connection open
}

// New builds a Server. It starts nothing: call Serve.
func New(opts Options) (*Server, error) {
	if opts.Decide == nil {
		return nil, errors.New("building the sandbox network proxy: Options.Decide is nil; the proxy needs a Decider to allow or refuse connections")
	}
	if opts.Dial == nil {
		d := &net.Dialer{Timeout: dialTimeout}
		opts.Dial = d.DialContext
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.IdleTimeout == 0 {
		opts.IdleTimeout = defaultIdleTimeout
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		opts:      opts,
		log:       opts.Logger,
		ctx:       ctx,
		cancel:    cancel,
		httpLn:    newConnListener(),
		listeners: make(map[net.Listener]struct{}),
		conns:     make(map[*conn]struct{}),
	}
	s.transport = &http.Transport{
		Proxy:                 nil, // never chain to the daemon's own proxy variables
		DialContext:           s.dialUpstream,
		DisableCompression:    true, // pass Accept-Encoding and bodies through untouched
		MaxIdleConns:          64,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	s.proxy = &httputil.ReverseProxy{
		Rewrite:       rewrite,
		Transport:     s.transport,
		FlushInterval: -1, // stream: flush after every write
		ErrorHandler:  s.proxyError,
		ErrorLog:      s.log.StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Debug}),
	}
	idle := opts.IdleTimeout
	if idle < 0 {
		idle = 0
	}
	s.http = &http.Server{
		Handler:           http.HandlerFunc(s.serveHTTP),
		ReadHeaderTimeout: handshakeTimeout,
		IdleTimeout:       idle,
		BaseContext:       func(net.Listener) context.Context { return s.ctx },
		ErrorLog:          s.log.StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Debug}),
	}
	return s, nil
}

// Serve accepts connections on ln until Close, and returns ErrServerClosed
// then (or the listener's error). Each connection is served on its own
// goroutine: a first byte of 0x05 is SOCKS5, anything else HTTP/1.x. Close
// closes ln.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	if !s.httpStarted {
		s.httpStarted = true
		go s.http.Serve(s.httpLn) // returns when Close closes httpLn
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
	}()

	var delay time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.isClosed() {
				return ErrServerClosed
			}
			var te interface{ Temporary() bool }
			if errors.As(err, &te) && te.Temporary() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.log.Warn("accepting a sandbox proxy connection; retrying", "error", err, "delay", delay)
				select {
				case <-time.After(delay):
				case <-s.ctx.Done():
				}
				continue
			}
			return fmt.Errorf("accepting sandbox proxy connections: %w", err)
		}
		delay = 0
		tc := s.track(c, nil)
		if tc == nil {
			return ErrServerClosed
		}
		go s.serveConn(tc)
	}
}

// Close stops the Server: it closes the listeners, every client
// connection and tunnel, and every upstream connection, and ends the
// context of Decide calls in progress. It does not wait for the
// connections' goroutines, which end as their connections fail (one in
// Decide when Decide returns). It is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	lns, conns := s.listeners, s.conns
	s.listeners, s.conns = nil, nil
	s.mu.Unlock()

	s.cancel()
	var errs []error
	for ln := range lns {
		if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	s.httpLn.Close()
	s.http.Close()
	for c := range conns {
		c.Conn.Close()
	}
	s.transport.CloseIdleConnections()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("closing the sandbox network proxy: %w", err)
	}
	return nil
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// serveConn sniffs the first byte of a client connection and serves it.
func (s *Server) serveConn(c *conn) {
	c.SetDeadline(time.Now().Add(handshakeTimeout))
	br := bufio.NewReader(c.Conn)
	first, err := br.Peek(1)
	if err != nil {
		c.Close()
		return
	}
	c.r = br
	if first[0] == socksVersion {
		s.serveSOCKS(c, br)
		return
	}
	c.SetDeadline(time.Time{})
	s.httpLn.deliver(c)
}

// decide asks the Decider, logs the answer and reports a refusal to
// OnBlocked (unless the client left or the Server closed meanwhile).
func (s *Server) decide(ctx context.Context, host string, port int, proto string) Verdict {
	v := s.opts.Decide(ctx, host, port)
	if ctx.Err() != nil {
		return Verdict{Reason: "the connection ended before the sandbox decided"}
	}
	if v.Allow {
		s.log.Debug("sandbox connection allowed", "proto", proto, "host", host, "port", port, "reason", v.Reason)
		return v
	}
	s.log.Debug("sandbox connection blocked", "proto", proto, "host", host, "port", port, "reason", v.Reason)
	if s.opts.OnBlocked != nil {
		s.opts.OnBlocked(host, port, v.Reason)
	}
	return v
}

// blockedMessage is what a refused client reads.
func blockedMessage(host, reason string) string {
	if reason == "" {
		return "blocked by the sandbox: domain " + host
	}
	return fmt.Sprintf("blocked by the sandbox: domain %s (%s)", host, reason)
}

// dialUpstream dials an allowed target; the connection is closed by Close.
func (s *Server) dialUpstream(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := s.opts.Dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	tc := s.track(c, nil)
	if tc == nil {
		return nil, ErrServerClosed
	}
	return tc, nil
}

// conn is a tracked connection: Close closes it and forgets it. Reads go
// through r when it is set (the buffer that sniffed the first byte).
type conn struct {
	net.Conn
	r    io.Reader
	s    *Server
	once sync.Once
}

// track registers c to be closed by Close, or closes it and returns nil
// when the Server is closed.
func (s *Server) track(c net.Conn, r io.Reader) *conn {
	tc := &conn{Conn: c, r: r, s: s}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.Close()
		return nil
	}
	s.conns[tc] = struct{}{}
	return tc
}

func (c *conn) Read(p []byte) (int, error) {
	if c.r != nil {
		return c.r.Read(p)
	}
	return c.Conn.Read(p)
}

func (c *conn) Close() error {
	c.once.Do(func() {
		c.s.mu.Lock()
		delete(c.s.conns, c)
		c.s.mu.Unlock()
	})
	return c.Conn.Close()
}

// CloseWrite half-closes the connection when the underlying one can.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(closeWriter); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

type closeWriter interface{ CloseWrite() error }

// connListener is the net.Listener http.Server serves: Serve hands it the
// connections it sniffed as HTTP.
type connListener struct {
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newConnListener() *connListener {
	return &connListener{ch: make(chan net.Conn), done: make(chan struct{})}
}

// deliver hands c to http.Server, or closes it when the listener is closed.
func (l *connListener) deliver(c net.Conn) {
	select {
	case l.ch <- c:
	case <-l.done:
		c.Close()
	}
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *connListener) Addr() net.Addr { return proxyAddr{} }

type proxyAddr struct{}

func (proxyAddr) Network() string { return "netproxy" }
func (proxyAddr) String() string  { return "netproxy" }
