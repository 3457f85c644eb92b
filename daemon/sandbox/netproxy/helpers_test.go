package netproxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(bridgeHelper())
	}
	goleak.VerifyTestMain(m)
}

// target is one decision the fixture's Decider was asked for.
type target struct {
	host string
	port int
}

func (t target) String() string { return hostPort(t.host, t.port) }

// fixture is a proxy on two unix sockets (as the daemon runs it), a
// bridge to each on 127.0.0.1, and loopback servers behind test names:
//
//	allowed.test:80, other.test:80, slow.test:80, 10.1.2.3:80, [fd00::1]:80  the HTTP backend
//	allowed.test:443                                                          the HTTPS backend
//	echo.test:7                                                               a TCP echo server
//
// denied.test is refused ("not in allowedDomains"); slow.test waits for
// releaseSlow; hang.test waits until its context ends.
type fixture struct {
	srv                 *Server
	httpPort, socksPort int
	backend, tlsBackend *httptest.Server
	echo                net.Listener

	slowEntered chan struct{} // a Decide for slow.test started
	slow        chan struct{} // closed to let slow.test through
	hangEntered chan struct{} // a Decide for hang.test started
	hangExited  chan struct{} // a Decide for hang.test saw its context end
	backendHang chan struct{} // the backend's /hang handler started
	backendGone chan struct{} // the backend's /hang handler saw its context end

	serveErrs chan error
	dir       string // holds the unix sockets

	mu        sync.Mutex // guards the fields below
	decisions []target
	blocked   []string // "host:port reason"
	dials     []string
}

// fixtureOptions adjusts the fixture's server.
type fixtureOptions struct {
	idle time.Duration
}

func newFixture(tb testing.TB, fo ...fixtureOptions) *fixture {
	tb.Helper()
	f := &fixture{
		slowEntered: make(chan struct{}, 16),
		slow:        make(chan struct{}),
		hangEntered: make(chan struct{}, 16),
		hangExited:  make(chan struct{}, 16),
		backendHang: make(chan struct{}, 16),
		backendGone: make(chan struct{}, 16),
		serveErrs:   make(chan error, 2),
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hang" {
			f.backendHang <- struct{}{}
			<-r.Context().Done()
			f.backendGone <- struct{}{}
			return
		}
		fmt.Fprintf(w, "backend tls=%v host=%s path=%s proxy-connection=%q proxy-authorization=%q\n",
			r.TLS != nil, r.Host, r.URL.Path, r.Header.Get("Proxy-Connection"), r.Header.Get("Proxy-Authorization"))
	})
	f.backend = httptest.NewServer(handler)
	f.tlsBackend = httptest.NewTLSServer(handler)
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	f.echo = echo
	var echoWG sync.WaitGroup
	echoWG.Add(1)
	go func() {
		defer echoWG.Done()
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			echoWG.Add(1)
			go func() {
				defer echoWG.Done()
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()

	plain := f.backend.Listener.Addr().String()
	routes := map[string]string{
		"allowed.test:80":  plain,
		"other.test:80":    plain,
		"slow.test:80":     plain,
		"10.1.2.3:80":      plain,
		"[fd00::1]:80":     plain,
		"allowed.test:443": f.tlsBackend.Listener.Addr().String(),
		"echo.test:7":      echo.Addr().String(),
	}
	allowed := map[string]bool{"allowed.test": true, "other.test": true, "echo.test": true, "10.1.2.3": true, "fd00::1": true}

	opts := Options{
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			f.mu.Lock()
			f.dials = append(f.dials, addr)
			f.mu.Unlock()
			real, ok := routes[addr]
			if !ok {
				return nil, fmt.Errorf("no route to %s in the test", addr)
			}
			var d net.Dialer
			return d.DialContext(ctx, network, real)
		},
		Decide: func(ctx context.Context, host string, port int) Verdict {
			f.mu.Lock()
			f.decisions = append(f.decisions, target{host, port})
			f.mu.Unlock()
			switch {
			case host == "denied.test":
				return Verdict{Reason: "not in allowedDomains"}
			case host == "slow.test":
				f.slowEntered <- struct{}{}
				select {
				case <-f.slow:
					return Verdict{Allow: true}
				case <-ctx.Done():
					return Verdict{}
				}
			case host == "hang.test":
				f.hangEntered <- struct{}{}
				<-ctx.Done()
				f.hangExited <- struct{}{}
				return Verdict{}
			case allowed[host]:
				return Verdict{Allow: true, Reason: "in allowedDomains"}
			}
			return Verdict{Reason: "unknown to the test"}
		},
		OnBlocked: func(host string, port int, reason string) {
			f.mu.Lock()
			f.blocked = append(f.blocked, hostPort(host, port)+" "+reason)
			f.mu.Unlock()
		},
	}
	if len(fo) > 0 {
		opts.IdleTimeout = fo[0].idle
	}
	f.srv, err = New(opts)
	if err != nil {
		tb.Fatal(err)
	}

	dir, err := os.MkdirTemp("", "netproxy") // short: a socket path has at most 107 bytes
	if err != nil {
		tb.Fatal(err)
	}
	f.dir = dir
	var bridges []*Bridge
	for _, name := range []string{"http.sock", "socks.sock"} {
		path := dir + "/" + name
		ln, err := net.Listen("unix", path)
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.Chmod(path, 0o600); err != nil {
			tb.Fatal(err)
		}
		go func() { f.serveErrs <- f.srv.Serve(ln) }()
		b, err := ListenBridge("127.0.0.1:0", path)
		if err != nil {
			tb.Fatal(err)
		}
		bridges = append(bridges, b)
	}
	f.httpPort, f.socksPort = bridges[0].Port(), bridges[1].Port()
	ctx, cancel := context.WithCancel(context.Background())
	bridgeDone := make(chan error, 1)
	go func() { bridgeDone <- RunBridge(ctx, bridges...) }()

	tb.Cleanup(func() {
		cancel()
		if err := <-bridgeDone; err != nil {
			tb.Errorf("RunBridge: %v", err)
		}
		if err := f.srv.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
		for range 2 {
			if err := <-f.serveErrs; !errors.Is(err, ErrServerClosed) {
				tb.Errorf("Serve returned %v, want ErrServerClosed", err)
			}
		}
		f.backend.Close()
		f.tlsBackend.Close()
		echo.Close()
		echoWG.Wait()
		os.RemoveAll(dir)
	})
	return f
}

func (f *fixture) socketPath(name string) string { return f.dir + "/" + name }

func (f *fixture) proxyURL() string  { return fmt.Sprintf("http://127.0.0.1:%d", f.httpPort) }
func (f *fixture) socksAddr() string { return fmt.Sprintf("127.0.0.1:%d", f.socksPort) }

func (f *fixture) decided() []target {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.decisions)
}

func (f *fixture) dialed() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.dials)
}

func (f *fixture) blockedCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.blocked)
}

// curlResult is what one run of curl printed.
type curlResult struct {
	stdout, stderr string
	code           int
}

// curl runs the real curl with args, ignoring ~/.curlrc and the
// environment's proxy variables, plus env.
func curl(tb testing.TB, env []string, args ...string) curlResult {
	tb.Helper()
	path, err := exec.LookPath("curl")
	if err != nil {
		tb.Skip("curl is not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, append([]string{"-q", "-sS", "--max-time", "20"}, args...)...)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + os.TempDir()}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	res := curlResult{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
	case err != nil:
		tb.Fatalf("running curl: %v", err)
	}
	return res
}

// rawConn dials a bridge port; reads time out after 10 s so a broken
// proxy fails the test instead of hanging it.
func rawConn(tb testing.TB, port int) (net.Conn, *bufio.Reader) {
	tb.Helper()
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c, bufio.NewReader(c)
}

// connect sends CONNECT target on c and reads the status line and headers.
func connect(tb testing.TB, c net.Conn, br *bufio.Reader, target string) string {
	tb.Helper()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	status, err := br.ReadString('\n')
	if err != nil {
		tb.Fatalf("reading the CONNECT response: %v", err)
	}
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			tb.Fatalf("reading the CONNECT response: %v", err)
		}
		if line == "\r\n" {
			return strings.TrimSpace(status)
		}
	}
}

// socksDial sends a SOCKS5 greeting and a CONNECT request to a domain
// and returns the reply code.
func socksDial(tb testing.TB, c net.Conn, br *bufio.Reader, host string, port int) byte {
	tb.Helper()
	req := []byte{5, 1, 0, 5, 1, 0, 3, byte(len(host))}
	req = append(append(req, host...), byte(port>>8), byte(port))
	if _, err := c.Write(req); err != nil {
		tb.Fatal(err)
	}
	reply := make([]byte, 2+10)
	if _, err := io.ReadFull(br, reply); err != nil {
		tb.Fatalf("reading the SOCKS replies: %v", err)
	}
	if reply[0] != 5 || reply[1] != 0 {
		tb.Fatalf("SOCKS method reply %x, want 05 00", reply[:2])
	}
	return reply[3]
}

// wait receives from ch, failing the test if nothing comes in 10 s (a
// bound for a broken proxy, not a sleep).
func wait[T any](tb testing.TB, ch <-chan T, what string) T {
	tb.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		tb.Fatalf("waited 10 s for %s", what)
		panic("unreachable")
	}
}

// expectClosed waits until the peer closes c.
func expectClosed(tb testing.TB, c net.Conn, br *bufio.Reader) {
	tb.Helper()
	if _, err := io.ReadAll(br); err != nil {
		tb.Fatalf("reading until the proxy closes the connection: %v", err)
	}
}

// helperEnv names the unix socket a re-executed test binary bridges to
// from inside bubblewrap's network namespace (TestBridgeInNetworkNamespace).
const (
	helperEnv       = "NETPROXY_TEST_BRIDGE_SOCKET"
	helperDirectEnv = "NETPROXY_TEST_DIRECT_ADDR"
)

// bridgeHelper is the test binary re-executed inside the sandbox: it runs
// a bridge, then curl with Env's variables (no -x), then curl straight at
// a loopback server of the host, which must fail.
func bridgeHelper() int {
	b, err := ListenBridge("127.0.0.1:0", os.Getenv(helperEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- RunBridge(ctx, b) }()
	run := func(args ...string) (string, int) {
		cmd := exec.Command("curl", append([]string{"-q", "-sS", "--max-time", "5"}, args...)...)
		cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=/tmp"}, Env(b.Port(), b.Port(), false)...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return strings.TrimSpace(string(out)), code
	}
	out, code := run("http://allowed.test/inside")
	fmt.Printf("proxied %d: %s\n", code, out)
	out, code = run("-k", "https://allowed.test/inside-tls")
	fmt.Printf("connect %d: %s\n", code, out)
	out, code = run("--noproxy", "*", "http://"+os.Getenv(helperDirectEnv)+"/")
	fmt.Printf("direct %d: %s\n", code, out)
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return 0
}
