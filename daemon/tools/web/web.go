// Package web owns the network tools: WebFetch, which reads one URL and
// turns it into Markdown for the model, and WebSearch, which asks a
// configured search backend (SearXNG or Brave) and lists its results.
//
// Both only read from the network: they write no files and run no
// processes. They do not decide permissions: each call reports the host it
// reaches in a tool.Access of kind network and the pipeline in
// daemon/dispatch decides.
package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tackle-agent/tackle/daemon/config"
	"github.com/tackle-agent/tackle/daemon/tool"
)

// Options configures the web tools. A nil *Options means the defaults.
type Options struct {
	// Settings returns the merged settings for a directory; WebSearch reads
	// its backend from the "webSearch" key. Nil means no backend.
	Settings func(cwd string) (*config.Settings, []config.Problem)
	// HTTPClient makes every request (nil: a client of this package with
	// dial and TLS timeouts). WebFetch handles redirects itself on a copy.
	HTTPClient *http.Client
	// MaxBytes is the most WebFetch reads of one response body (0: 10 MB).
	MaxBytes int64
	// Timeout bounds a whole fetch or search, redirects and body included (0: 30 s).
	Timeout time.Duration
	// CacheTTL is how long a fetched page is reused (0: 15 min, negative: no cache).
	CacheTTL time.Duration
	// Logger receives debug logs of requests (nil: discard).
	Logger hclog.Logger
	// Ask, if set, has the session's small model answer WebFetch's prompt
	// from the fetched page (Claude Code's behaviour): the result is its
	// answer. Nil, or a failure, returns the page itself for the model to
	// read.
	Ask func(ctx context.Context, env tool.Env, system, prompt string) (string, error)
}

const (
	defaultMaxBytes = 10 << 20
	defaultTimeout  = 30 * time.Second
	defaultCacheTTL = 15 * time.Minute
	// cacheBytes bounds the total size of the fetch cache.
	cacheBytes = 50 << 20
	// maxResultChars is the size over which the pipeline would persist a
	// result (the pipeline caps it at 50,000). Pages stay below it.
	maxResultChars = 50000
	// userAgent identifies tackle to servers.
	userAgent = "Mozilla/5.0 (compatible; tackle; +https://github.com/tackle-agent/tackle)"
)

// Tools returns the WebFetch and WebSearch tools. They share one HTTP client
// and WebFetch keeps one cache for the life of the returned tools.
func Tools(opts *Options) []tool.Tool {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = defaultMaxBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = defaultTimeout
	}
	if o.CacheTTL == 0 {
		o.CacheTTL = defaultCacheTTL
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.HTTPClient == nil {
		o.HTTPClient = defaultClient(o.Timeout)
	}
	var c *cache
	if o.CacheTTL > 0 {
		c = newCache(cacheBytes, o.CacheTTL, time.Now)
	}
	return []tool.Tool{newFetch(o, c), &Search{opts: o}}
}

// defaultClient is the client used when Options.HTTPClient is nil.
func defaultClient(timeout time.Duration) *http.Client {
	d := &net.Dialer{Timeout: min(timeout, 10*time.Second), KeepAlive: 30 * time.Second}
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          20,
		IdleConnTimeout:       30 * time.Second,
		TLSHandshakeTimeout:   min(timeout, 10*time.Second),
		ExpectContinueTimeout: time.Second,
	}}
}

// attributes are the attributes of every call of both tools.
func attributes() tool.Attributes {
	return tool.Attributes{
		ReadOnly:        true,
		ConcurrencySafe: true,
		Origin:          tool.OriginBuiltin,
		MaxResultChars:  maxResultChars,
	}
}

// decodeInput unmarshals a tool input, naming the problem for the model.
func decodeInput(raw json.RawMessage, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("reading the input: %v; send a JSON object matching the tool's schema", err)
	}
	return nil
}

// isLoopback reports whether host (without port) is localhost or a loopback address.
func isLoopback(host string) bool {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && ip.IsLoopback()
}

// describeNetError turns a request error into a sentence naming the host:
// a timeout, a refused connection, an unknown host or a TLS failure.
func describeNetError(ctx context.Context, err error, u *url.URL, timeout time.Duration) string {
	host := u.Host
	var dnsErr *net.DNSError
	var opErr *net.OpError
	switch {
	case errors.Is(context.Cause(ctx), errTimeout) || errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("%s did not answer within %v (timed out)", host, timeout)
	case errors.Is(err, context.Canceled):
		return fmt.Sprintf("the request to %s was cancelled", host)
	case errors.As(err, &dnsErr):
		return fmt.Sprintf("cannot resolve host %s: %v", u.Hostname(), dnsErr.Err)
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return fmt.Sprintf("cannot connect to %s: %v", host, unwrapSyscall(opErr.Err))
	}
	return fmt.Sprintf("request to %s failed: %v", host, unwrapURLError(err))
}

// errTimeout is the cause of a context ended by a tool's own timeout.
var errTimeout = errors.New("web tool timeout")

// withTimeout bounds ctx by d, with errTimeout as the cause when d passes.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, d, errTimeout)
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func unwrapSyscall(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

// domainOf is the host of u as permission rules match it: lowercased,
// without the port, the brackets of an IPv6 address or a final dot.
func domainOf(u *url.URL) string {
	if u == nil {
		return ""
	}
	return strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
}
