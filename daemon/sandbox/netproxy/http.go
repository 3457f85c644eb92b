package netproxy

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"strings"
)

// blockedHeader is the header of a refusal, as Claude Code's proxy sends
// X-Proxy-Error: blocked-by-allowlist; blockedDetailHeader repeats the
// message, which curl -v prints even for a refused CONNECT (whose body it
// never shows).
const (
	blockedHeader       = "X-Proxy-Error"
	blockedValue        = "blocked-by-sandbox"
	blockedDetailHeader = "X-Proxy-Error-Detail"
)

// serveHTTP serves one request of an HTTP client connection: CONNECT opens
// a tunnel, an absolute-form request is forwarded. Each request is decided
// on its own, so a keep-alive connection may reach several hosts.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		s.serveConnect(w, r)
		return
	}
	s.serveForward(w, r)
}

// serveConnect answers CONNECT host:port: 200 and a byte tunnel, or a 403.
func (s *Server) serveConnect(w http.ResponseWriter, r *http.Request) {
	host, port, _, err := splitTarget(r.Host, 0)
	if err != nil {
		http.Error(w, "tackle's sandbox proxy: "+err.Error(), http.StatusBadRequest)
		return
	}
	ctx := r.Context()
	if v := s.decide(ctx, host, port, "connect"); !v.Allow {
		if ctx.Err() == nil {
			refuse(w, host, v.Reason)
		}
		return
	}
	up, err := s.dialUpstream(ctx, "tcp", hostPort(host, port))
	if err != nil {
		if ctx.Err() == nil {
			s.log.Debug("dialing an allowed sandbox target", "host", host, "port", port, "error", err)
			http.Error(w, fmt.Sprintf("tackle's sandbox proxy could not connect to %s: %v", hostPort(host, port), err), http.StatusBadGateway)
		}
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok { // never with http.Server's HTTP/1 connections
		up.Close()
		http.Error(w, "tackle's sandbox proxy cannot tunnel this connection", http.StatusInternalServerError)
		return
	}
	client, rw, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	// http.Server forgets a hijacked connection; Close still closes it
	// since it is the *conn Serve tracked.
	tc, ok := client.(*conn)
	if !ok {
		if tc = s.track(client, nil); tc == nil {
			up.Close()
			return
		}
	}
	if _, err := io.WriteString(tc, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		tc.Close()
		up.Close()
		return
	}
	// Bytes the client sent after the request (a TLS ClientHello, say)
	// may wait in http's buffer.
	var early []byte
	if n := rw.Reader.Buffered(); n > 0 {
		early, _ = rw.Reader.Peek(n)
	}
	s.splice(tc, up, early)
}

// serveForward forwards an absolute-form request (GET http://host/path)
// and streams the response back.
func (s *Server) serveForward(w http.ResponseWriter, r *http.Request) {
	if !r.URL.IsAbs() || r.URL.Host == "" {
		http.Error(w, "tackle's sandbox proxy serves only proxy requests: CONNECT host:port, or a full URL (GET http://example.com/ HTTP/1.1); set HTTP_PROXY to use it", http.StatusBadRequest)
		return
	}
	scheme := strings.ToLower(r.URL.Scheme)
	defPort := map[string]int{"http": 80, "https": 443}[scheme]
	if defPort == 0 {
		http.Error(w, fmt.Sprintf("tackle's sandbox proxy forwards only http and https URLs, not %s", scheme), http.StatusBadRequest)
		return
	}
	host, port, explicit, err := splitTarget(r.URL.Host, defPort)
	if err != nil {
		http.Error(w, "tackle's sandbox proxy: "+err.Error(), http.StatusBadRequest)
		return
	}
	ctx := r.Context()
	if v := s.decide(ctx, host, port, "http"); !v.Allow {
		if ctx.Err() == nil {
			refuse(w, host, v.Reason)
		}
		return
	}
	// Dial exactly what was decided: the normalised host.
	u := *r.URL
	u.Scheme = scheme
	u.Host = hostPort(host, port)
	if !explicit {
		u.Host = strings.TrimSuffix(u.Host, fmt.Sprintf(":%d", port))
	}
	out := r.WithContext(ctx) // a shallow copy
	out.URL = &u
	out.Host = u.Host
	s.proxy.ServeHTTP(w, out)
}

// rewrite prepares a forwarded request; ReverseProxy has already removed
// the hop-by-hop headers (Connection and what it names, Keep-Alive,
// Proxy-Connection, Proxy-Authorization, Te but trailers, Trailer,
// Transfer-Encoding, Upgrade but a protocol switch) and X-Forwarded-*.
func rewrite(pr *httputil.ProxyRequest) {
	pr.Out.Header.Del("Proxy-Authorization")
	pr.Out.Header.Del("Proxy-Connection")
	pr.Out.Host = "" // the Host header is the URL's host
}

// proxyError answers a forwarded request that got no response.
func (s *Server) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return // the client left, or the Server closed
	}
	s.log.Debug("forwarding a sandbox request", "url", r.URL.Redacted(), "error", err)
	http.Error(w, fmt.Sprintf("tackle's sandbox proxy could not reach %s: %v", r.URL.Host, err), http.StatusBadGateway)
}

// refuse writes the 403 of a blocked request.
func refuse(w http.ResponseWriter, host, reason string) {
	msg := blockedMessage(host, reason)
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set(blockedHeader, blockedValue)
	h.Set(blockedDetailHeader, headerSafe(msg))
	w.WriteHeader(http.StatusForbidden)
	io.WriteString(w, msg+"\n")
}

// headerSafe replaces control characters, which a header value may not hold.
func headerSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}
