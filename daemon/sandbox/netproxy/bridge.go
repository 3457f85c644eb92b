package netproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// bridgeDialTimeout bounds connecting to the proxy's unix socket.
const bridgeDialTimeout = 10 * time.Second

// Bridge runs inside the sandbox's network namespace, in the small helper
// process bubblewrap starts in front of the command: it accepts TCP
// connections on a loopback address and forwards each, byte for byte, to
// the proxy's unix socket bound into the namespace. It decides nothing.
type Bridge struct {
	ln       net.Listener
	unixPath string
}

// ListenBridge listens on tcpAddr, a loopback address such as
// 127.0.0.1:3128 (port 0 picks one: see Port), for a bridge to the unix
// socket at unixPath. It starts nothing: call Run or RunBridge, or Close.
func ListenBridge(tcpAddr, unixPath string) (*Bridge, error) {
	host, _, err := net.SplitHostPort(tcpAddr)
	if err != nil {
		return nil, fmt.Errorf("listening for the sandbox bridge on %q: %w", tcpAddr, err)
	}
	if ip, err := netip.ParseAddr(host); err != nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("listening for the sandbox bridge on %q: the bridge listens on a loopback address only, such as 127.0.0.1:3128", tcpAddr)
	}
	if unixPath == "" {
		return nil, errors.New("listening for the sandbox bridge: the proxy's unix socket path is empty")
	}
	ln, err := net.Listen("tcp", tcpAddr)
	if err != nil {
		return nil, fmt.Errorf("listening for the sandbox bridge: %w", err)
	}
	return &Bridge{ln: ln, unixPath: unixPath}, nil
}

// Addr is the TCP address the bridge listens on.
func (b *Bridge) Addr() net.Addr { return b.ln.Addr() }

// Port is the TCP port the bridge listens on.
func (b *Bridge) Port() int { return b.ln.Addr().(*net.TCPAddr).Port }

// Close closes the listener; Run does so itself when its context ends.
func (b *Bridge) Close() error { return b.ln.Close() }

// Run forwards connections until ctx ends, then closes the listener and
// every forwarded connection, waits for their goroutines and returns nil;
// or returns the listener's error. A connection whose unix socket cannot
// be reached is closed. Call it once.
func (b *Bridge) Run(ctx context.Context) error {
	var (
		mu     sync.Mutex // guards conns and closed
		conns  = make(map[net.Conn]struct{})
		closed bool
		wg     sync.WaitGroup
	)
	shut := func() {
		mu.Lock()
		defer mu.Unlock()
		if !closed {
			closed = true
			b.ln.Close()
			for c := range conns {
				c.Close()
			}
		}
	}
	add := func(c net.Conn) bool {
		mu.Lock()
		defer mu.Unlock()
		if closed {
			c.Close()
			return false
		}
		conns[c] = struct{}{}
		return true
	}
	remove := func(c net.Conn) {
		mu.Lock()
		delete(conns, c)
		mu.Unlock()
		c.Close()
	}
	stop := context.AfterFunc(ctx, shut)
	defer func() {
		stop()
		shut()
		wg.Wait()
	}()

	var delay time.Duration
	for {
		c, err := b.ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var te interface{ Temporary() bool }
			if errors.As(err, &te) && te.Temporary() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				select {
				case <-time.After(delay):
				case <-ctx.Done():
				}
				continue
			}
			return fmt.Errorf("accepting connections on the sandbox bridge %s: %w", b.ln.Addr(), err)
		}
		delay = 0
		if !add(c) {
			return nil
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer remove(c)
			d := net.Dialer{Timeout: bridgeDialTimeout}
			u, err := d.DialContext(ctx, "unix", b.unixPath)
			if err != nil || !add(u) {
				return
			}
			defer remove(u)
			done := make(chan struct{})
			go func() {
				defer close(done)
				bridgePipe(u, c)
			}()
			bridgePipe(c, u)
			<-done
		}()
	}
}

// bridgePipe copies src to dst; at src's EOF it half-closes dst, on an
// error it closes both.
func bridgePipe(dst, src net.Conn) {
	_, err := io.Copy(dst, src)
	if err == nil {
		if cw, ok := dst.(closeWriter); ok && cw.CloseWrite() == nil {
			return
		}
	}
	dst.Close()
	src.Close()
}

// RunBridge runs the bridges until ctx ends or one fails, then stops them
// all and returns the first failure, or nil.
func RunBridge(ctx context.Context, bridges ...*Bridge) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(bridges))
	for _, b := range bridges {
		go func() {
			err := b.Run(ctx)
			if err != nil {
				cancel()
			}
			errs <- err
		}()
	}
	var first error
	for range bridges {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Env returns the variables that point a sandboxed command's programs at
// the bridges on 127.0.0.1: HTTP_PROXY, HTTPS_PROXY and their lower-case
// forms (curl, pip, Go, git over https) at httpPort; ALL_PROXY and
// all_proxy as socks5h:// (names resolved by the proxy) at socksPort;
// npm_config_proxy and npm_config_https_proxy, which npm and yarn read
// first; and NO_PROXY, no_proxy and npm_config_noproxy, which are
// "localhost,127.0.0.1,::1" when allowLocal (the command may reach
// loopback servers itself) and empty otherwise, overriding an inherited
// value that would send some hosts around the proxy. git reads the same
// variables as curl (for https; ssh remotes are not proxied). A port of 0
// leaves out that proxy's variables. httpPort and socksPort may be equal:
// the proxy tells the protocols apart.
func Env(httpPort, socksPort int, allowLocal bool) []string {
	var env []string
	if httpPort > 0 {
		u := "http://127.0.0.1:" + strconv.Itoa(httpPort)
		for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "npm_config_proxy", "npm_config_https_proxy"} {
			env = append(env, k+"="+u)
		}
	}
	if socksPort > 0 {
		u := "socks5h://127.0.0.1:" + strconv.Itoa(socksPort)
		env = append(env, "ALL_PROXY="+u, "all_proxy="+u)
	}
	noProxy := ""
	if allowLocal {
		noProxy = "localhost,127.0.0.1,::1"
	}
	for _, k := range []string{"NO_PROXY", "no_proxy", "npm_config_noproxy"} {
		env = append(env, k+"="+noProxy)
	}
	return env
}
