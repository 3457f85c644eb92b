package netproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

const deniedPhrase = "blocked by the sandbox: domain denied.test (not in allowedDomains)"

func TestNewNeedsDecider(t *testing.T) {
	if _, err := New(Options{}); err == nil || !strings.Contains(err.Error(), "Decide") {
		t.Fatalf("New without Decide: %v, want an error naming Decide", err)
	}
}

func TestCurlHTTPProxy(t *testing.T) {
	f := newFixture(t)
	res := curl(t, nil, "-x", f.proxyURL(), "--proxy-user", "u:p", "http://Allowed.TEST./hello")
	if res.code != 0 {
		t.Fatalf("curl: exit %d: %s", res.code, res.stderr)
	}
	// Proxy-Authorization (from --proxy-user) and Proxy-Connection stay
	// with the proxy; the Host is the decided, normalised name.
	want := `backend tls=false host=allowed.test path=/hello proxy-connection="" proxy-authorization=""` + "\n"
	if res.stdout != want {
		t.Errorf("body = %q, want %q", res.stdout, want)
	}
	// An IPv6 literal reaches the Decider without brackets, lower-cased.
	res = curl(t, nil, "-x", f.proxyURL(), "http://[FD00::1]/v6")
	if res.code != 0 || !strings.HasPrefix(res.stdout, "backend tls=false host=[fd00::1] path=/v6") {
		t.Errorf("curl to [FD00::1]: exit %d, body %q: %s", res.code, res.stdout, res.stderr)
	}
	if diff := cmp.Diff([]target{{"allowed.test", 80}, {"fd00::1", 80}}, f.decided(), cmp.AllowUnexported(target{})); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
}

func TestCurlHTTPSThroughConnect(t *testing.T) {
	f := newFixture(t)
	res := curl(t, nil, "-k", "-x", f.proxyURL(), "https://allowed.test/secure")
	if res.code != 0 {
		t.Fatalf("curl: exit %d: %s", res.code, res.stderr)
	}
	if !strings.HasPrefix(res.stdout, "backend tls=true host=allowed.test path=/secure") {
		t.Errorf("body = %q, want the TLS backend's answer", res.stdout)
	}
	if diff := cmp.Diff([]target{{"allowed.test", 443}}, f.decided(), cmp.AllowUnexported(target{})); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
}

func TestCurlDeniedHTTP(t *testing.T) {
	f := newFixture(t)
	res := curl(t, nil, "-i", "-x", f.proxyURL(), "http://denied.test/secret")
	if res.code != 0 {
		t.Fatalf("curl: exit %d: %s", res.code, res.stderr)
	}
	for _, want := range []string{"HTTP/1.1 403 Forbidden", "X-Proxy-Error: blocked-by-sandbox", "X-Proxy-Error-Detail: " + deniedPhrase, "\r\n\r\n" + deniedPhrase + "\n"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("curl's output lacks %q:\n%s", want, res.stdout)
		}
	}
	if d := f.dialed(); len(d) != 0 {
		t.Errorf("the proxy dialled %v for a denied host", d)
	}
	if diff := cmp.Diff([]string{"denied.test:80 not in allowedDomains"}, f.blockedCalls()); diff != "" {
		t.Errorf("OnBlocked calls (-want +got):\n%s", diff)
	}
}

func TestCurlDeniedHTTPS(t *testing.T) {
	f := newFixture(t)
	res := curl(t, nil, "-v", "-k", "-x", f.proxyURL(), "https://denied.test/")
	// 56: CURLE_RECV_ERROR, "CONNECT tunnel failed, response 403".
	if res.code != 56 || !strings.Contains(res.stderr, "403") || !strings.Contains(res.stderr, deniedPhrase) {
		t.Errorf("curl: exit %d, want 56 and the refusal in stderr:\n%s", res.code, res.stderr)
	}
	if diff := cmp.Diff([]target{{"denied.test", 443}}, f.decided(), cmp.AllowUnexported(target{})); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
	if d := f.dialed(); len(d) != 0 {
		t.Errorf("the proxy dialled %v for a denied host", d)
	}
}

func TestCurlSOCKS5(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name  string
		args  []string
		want  string
		wantT target
	}{
		{"hostname http", []string{"--socks5-hostname", f.socksAddr(), "http://allowed.test/s"}, "backend tls=false host=allowed.test path=/s", target{"allowed.test", 80}},
		{"hostname https", []string{"-k", "--socks5-hostname", f.socksAddr(), "https://allowed.test/s"}, "backend tls=true host=allowed.test path=/s", target{"allowed.test", 443}},
		{"ipv4", []string{"--socks5", f.socksAddr(), "http://10.1.2.3/v4"}, "backend tls=false host=10.1.2.3 path=/v4", target{"10.1.2.3", 80}},
		{"ipv6", []string{"--socks5", f.socksAddr(), "http://[fd00::1]/v6"}, "backend tls=false host=[fd00::1] path=/v6", target{"fd00::1", 80}},
		// The HTTP socket speaks SOCKS too: the first byte tells.
		{"sniffed", []string{"--socks5-hostname", fmt.Sprintf("127.0.0.1:%d", f.httpPort), "http://other.test/x"}, "backend tls=false host=other.test path=/x", target{"other.test", 80}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := len(f.decided())
			res := curl(t, nil, tc.args...)
			if res.code != 0 || !strings.HasPrefix(res.stdout, tc.want) {
				t.Fatalf("curl: exit %d, body %q, want %q: %s", res.code, res.stdout, tc.want, res.stderr)
			}
			if got := f.decided()[n:]; !slices.Equal(got, []target{tc.wantT}) {
				t.Errorf("decisions %v, want [%v]", got, tc.wantT)
			}
		})
	}
	t.Run("denied", func(t *testing.T) {
		res := curl(t, nil, "--socks5-hostname", f.socksAddr(), "http://denied.test/")
		if res.code == 0 || !strings.Contains(res.stderr, "denied.test") {
			t.Errorf("curl: exit %d, want a failure naming denied.test: %s", res.code, res.stderr)
		}
		if slices.Contains(f.dialed(), "denied.test:80") {
			t.Error("the proxy dialled a denied host")
		}
		if b := f.blockedCalls(); !slices.Contains(b, "denied.test:80 not in allowedDomains") {
			t.Errorf("OnBlocked calls %v lack denied.test", b)
		}
	})
}

func TestCurlWithEnv(t *testing.T) {
	f := newFixture(t)
	env := Env(f.httpPort, f.socksPort, false)
	res := curl(t, env, "http://allowed.test/env")
	if res.code != 0 || !strings.HasPrefix(res.stdout, "backend tls=false host=allowed.test path=/env") {
		t.Errorf("http with Env: exit %d, body %q: %s", res.code, res.stdout, res.stderr)
	}
	res = curl(t, env, "-k", "https://allowed.test/env")
	if res.code != 0 || !strings.HasPrefix(res.stdout, "backend tls=true") {
		t.Errorf("https with Env: exit %d, body %q: %s", res.code, res.stdout, res.stderr)
	}
}

func TestKeepAliveDecidesEachRequest(t *testing.T) {
	f := newFixture(t)
	c, br := rawConn(t, f.httpPort)
	hosts := []string{"allowed.test", "other.test", "denied.test", "allowed.test"}
	for i, h := range hosts {
		fmt.Fprintf(c, "GET http://%s/%d HTTP/1.1\r\nHost: %s\r\nProxy-Connection: keep-alive\r\n\r\n", h, i, h)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d to %s: %v", i, h, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("backend tls=false host=%s path=/%d", h, i)
		if h == "denied.test" {
			want = deniedPhrase
		}
		if !strings.HasPrefix(string(body), want) || resp.Close {
			t.Errorf("request %d to %s: %s %q (close %v), want %q on a kept-alive connection", i, h, resp.Status, body, resp.Close, want)
		}
	}
	var want []target
	for _, h := range hosts {
		want = append(want, target{h, 80})
	}
	if diff := cmp.Diff(want, f.decided(), cmp.AllowUnexported(target{})); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
}

func TestBadRequests(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct{ name, req string }{
		{"origin form", "GET /path HTTP/1.1\r\nHost: allowed.test\r\n\r\n"},
		{"connect without port", "CONNECT allowed.test HTTP/1.1\r\nHost: allowed.test\r\n\r\n"},
		{"ftp", "GET ftp://allowed.test/x HTTP/1.1\r\nHost: allowed.test\r\n\r\n"},
		{"numeric name", "GET http://2130706433/ HTTP/1.1\r\nHost: 2130706433\r\n\r\n"},
		{"octal ipv4", "CONNECT 0177.0.0.1:443 HTTP/1.1\r\nHost: 0177.0.0.1:443\r\n\r\n"},
		{"zone", "CONNECT [fe80::1%25eth0]:443 HTTP/1.1\r\nHost: x\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, br := rawConn(t, f.httpPort)
			io.WriteString(c, tc.req)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("%s: %s, want 400", tc.name, resp.Status)
			}
		})
	}
	if d := f.decided(); len(d) != 0 {
		t.Errorf("the Decider was asked about %v", d)
	}
}

func TestSOCKSProtocol(t *testing.T) {
	f := newFixture(t)
	t.Run("no acceptable method", func(t *testing.T) {
		c, br := rawConn(t, f.socksPort)
		c.Write([]byte{5, 1, 2}) // user/password only
		got, _ := io.ReadAll(br)
		if string(got) != "\x05\xff" {
			t.Errorf("reply %x, want 05 ff and a close", got)
		}
	})
	for _, tc := range []struct {
		name string
		req  []byte
		want byte
	}{
		{"bind", []byte{5, 2, 0, 1, 127, 0, 0, 1, 0, 80}, socksCommandUnsupported},
		{"udp associate", []byte{5, 3, 0, 1, 127, 0, 0, 1, 0, 80}, socksCommandUnsupported},
		{"unknown address type", []byte{5, 1, 0, 9, 0, 0}, socksAddrUnsupported},
		{"invalid name", append([]byte{5, 1, 0, 3, 5}, "a b.c\x00\x50"...), socksHostUnreachable},
		{"denied", append([]byte{5, 1, 0, 3, 11}, "denied.test\x00\x50"...), socksNotAllowed},
		{"unroutable", append([]byte{5, 1, 0, 3, 10}, "other.test\x01\xbb"...), socksGeneralFailure}, // the test's Dial fails
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, br := rawConn(t, f.socksPort)
			c.Write(append([]byte{5, 1, 0}, tc.req...))
			got, _ := io.ReadAll(br)
			if len(got) != 12 || got[3] != tc.want {
				t.Errorf("replies %x, want reply code %#x", got, tc.want)
			}
		})
	}
	t.Run("ipv6 then a request", func(t *testing.T) {
		c, br := rawConn(t, f.socksPort)
		req := []byte{5, 1, 0, 5, 1, 0, 4, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 80}
		// The HTTP request goes with the handshake, before the reply.
		req = append(req, "GET /early HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"...)
		c.Write(req)
		got := make([]byte, 12)
		if _, err := io.ReadFull(br, got); err != nil || got[3] != socksSucceeded {
			t.Fatalf("replies %x (%v), want success", got, err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.HasPrefix(string(body), "backend tls=false host=x path=/early") {
			t.Errorf("body %q", body)
		}
		if d := f.decided(); !slices.Contains(d, target{"fd00::1", 80}) {
			t.Errorf("decisions %v lack fd00::1:80", d)
		}
	})
}

func TestSlowDeciderBlocksOnlyItsConnection(t *testing.T) {
	f := newFixture(t)
	slow := make(chan curlResult, 1)
	go func() { slow <- curl(t, nil, "-x", f.proxyURL(), "http://slow.test/late") }()
	wait(t, f.slowEntered, "the Decider to be asked about slow.test")
	// While slow.test waits for a person, others go through.
	for _, args := range [][]string{
		{"-x", f.proxyURL(), "http://allowed.test/now"},
		{"-k", "-x", f.proxyURL(), "https://allowed.test/now"},
		{"--socks5-hostname", f.socksAddr(), "http://other.test/now"},
	} {
		if res := curl(t, nil, args...); res.code != 0 || !strings.Contains(res.stdout, "path=/now") {
			t.Errorf("curl %v while slow.test waits: exit %d, %q %s", args, res.code, res.stdout, res.stderr)
		}
	}
	close(f.slow)
	if res := wait(t, slow, "curl to slow.test"); res.code != 0 || !strings.Contains(res.stdout, "host=slow.test path=/late") {
		t.Errorf("slow.test: exit %d, %q %s", res.code, res.stdout, res.stderr)
	}
}

func TestCloseEndsTunnels(t *testing.T) {
	f := newFixture(t)
	c1, br1 := rawConn(t, f.httpPort)
	if status := connect(t, c1, br1, "echo.test:7"); status != "HTTP/1.1 200 Connection established" {
		t.Fatalf("CONNECT: %q", status)
	}
	c2, br2 := rawConn(t, f.socksPort)
	if code := socksDial(t, c2, br2, "echo.test", 7); code != socksSucceeded {
		t.Fatalf("SOCKS CONNECT: reply %#x", code)
	}
	for _, p := range []struct {
		c  net.Conn
		br io.Reader
	}{{c1, br1}, {c2, br2}} {
		io.WriteString(p.c, "ping\n")
		buf := make([]byte, 5)
		if _, err := io.ReadFull(p.br, buf); err != nil || string(buf) != "ping\n" {
			t.Fatalf("echo through the tunnel: %q, %v", buf, err)
		}
	}
	if err := f.srv.Close(); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, c1, br1)
	expectClosed(t, c2, br2)
	if err := f.srv.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	// The unix sockets are closed: the bridge drops new connections.
	c3, br3 := rawConn(t, f.httpPort)
	io.WriteString(c3, "GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
	if got, _ := io.ReadAll(br3); len(got) != 0 {
		t.Errorf("a connection after Close got %q", got)
	}
	if err := f.srv.Serve(&net.UnixListener{}); !errors.Is(err, ErrServerClosed) {
		t.Errorf("Serve after Close: %v", err)
	}
}

func TestIdleTunnelIsClosed(t *testing.T) {
	f := newFixture(t, fixtureOptions{idle: 50 * time.Millisecond})
	c, br := rawConn(t, f.httpPort)
	if status := connect(t, c, br, "echo.test:7"); !strings.Contains(status, "200") {
		t.Fatalf("CONNECT: %q", status)
	}
	expectClosed(t, c, br) // no traffic: the proxy closes it
}

func TestVanishingClientLeaksNothing(t *testing.T) {
	f := newFixture(t)
	// Warm up what lives as long as the server (http.Server's accept loop).
	curl(t, nil, "-x", f.proxyURL(), "http://allowed.test/warm")
	f.srv.transport.CloseIdleConnections()
	ignore := goleak.IgnoreCurrent()

	t.Run("CONNECT while deciding", func(t *testing.T) {
		c, _ := rawConn(t, f.httpPort)
		fmt.Fprintf(c, "CONNECT hang.test:443 HTTP/1.1\r\nHost: hang.test:443\r\n\r\n")
		wait(t, f.hangEntered, "the Decider to be asked about hang.test")
		c.Close()
		wait(t, f.hangExited, "the Decider's context to end when the client left")
	})
	t.Run("SOCKS while deciding", func(t *testing.T) {
		c, _ := rawConn(t, f.socksPort)
		c.Write(append([]byte{5, 1, 0, 5, 1, 0, 3, 9}, "hang.test\x01\xbb"...))
		wait(t, f.hangEntered, "the Decider to be asked about hang.test")
		c.Close()
		wait(t, f.hangExited, "the Decider's context to end when the client left")
	})
	t.Run("half a request", func(t *testing.T) {
		c, _ := rawConn(t, f.httpPort)
		io.WriteString(c, "GET http://allowed.test/ HTTP/1.1\r\nHo")
		c.Close()
	})
	t.Run("half a SOCKS handshake", func(t *testing.T) {
		c, _ := rawConn(t, f.socksPort)
		c.Write([]byte{5, 1})
		c.Close()
	})
	t.Run("waiting for the response", func(t *testing.T) {
		c, _ := rawConn(t, f.httpPort)
		io.WriteString(c, "GET http://allowed.test/hang HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
		wait(t, f.backendHang, "the backend to get the request")
		c.Close()
		wait(t, f.backendGone, "the proxy to cancel the upstream request")
	})
	t.Run("inside a tunnel", func(t *testing.T) {
		c, br := rawConn(t, f.httpPort)
		connect(t, c, br, "echo.test:7")
		io.WriteString(c, "half a messa")
		c.Close()
	})
	goleak.VerifyNone(t, ignore)
}

// TestBridgeInNetworkNamespace runs the bridge where it belongs: in a
// process bubblewrap started with --unshare-net, which reaches the proxy
// only through the bound unix socket, with Env's variables for curl.
func TestBridgeInNetworkNamespace(t *testing.T) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip("bubblewrap is not installed")
	}
	base := []string{"--die-with-parent", "--unshare-net", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"}
	if out, err := exec.Command(bwrap, append(base, "--", "/bin/true")...).CombinedOutput(); err != nil {
		t.Skipf("bubblewrap cannot create namespaces here: %v %s", err, out)
	}
	f := newFixture(t)
	sock := f.socketPath("http.sock")
	args := append(base, "--bind", sock, sock, "--", os.Args[0], "-test.run=^$")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bwrap, args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", helperEnv + "=" + sock, helperDirectEnv + "=" + f.backend.Listener.Addr().String()}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the helper in the sandbox: %v\n%s", err, out)
	}
	got := string(out)
	for _, want := range []string{
		"proxied 0: backend tls=false host=allowed.test path=/inside ",
		"connect 0: backend tls=true host=allowed.test path=/inside-tls ",
		"direct 7: ", // CURLE_COULDNT_CONNECT: the host's loopback is not there
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the helper's output lacks %q:\n%s", want, got)
		}
	}
	if diff := cmp.Diff([]target{{"allowed.test", 80}, {"allowed.test", 443}}, f.decided(), cmp.AllowUnexported(target{})); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
}
