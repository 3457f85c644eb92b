package model

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The retry policy of ../shared/docs/agent.md §3, as both official Go SDKs
// apply it, plus tackle's rules:
//
//   - Retried: no response (a connection error), 408, 409, 429 and every
//     status ≥ 500 (529 included); a response header x-should-retry: true
//     or false overrides the status either way. A 200 whose body breaks
//     before its first event counts as no response.
//   - DefaultMaxRetries retries, so 3 attempts; each attempt carries
//     X-Stainless-Retry-Count: n (0 first), as the SDKs send it, so a
//     server (or the fake one) can tell a retry.
//   - The wait: retry-after-ms (milliseconds), else retry-after (seconds,
//     fractions allowed, or an HTTP date), else 0.5 s·2^n capped at 8 s,
//     minus up to 25 % random jitter. A negative wait is 0.
//   - tackle: a wait above MaxRetryWait, or one that would end past the
//     context's deadline, fails at once: the error is the response's, its
//     Hint naming the wait (and it wraps context.DeadlineExceeded for the
//     deadline). Request.Retry hears of every wait before it starts.
//   - tackle: no retry once the first event reached the decoder: Stream
//     returns only after it, and an error later (an in-stream error event
//     included) ends the stream with that error.
//   - tackle: an unreachable base URL (a host that does not resolve, a
//     refused connection) and an untrusted TLS certificate are not retried:
//     the error names the URL and its setting at once. Other connection
//     errors (a reset, a timeout) are.
const (
	DefaultMaxRetries = 2
	MaxRetryWait      = 60 * time.Second
	maxBackoff        = 8 * time.Second
	maxErrorBody      = 1 << 20
)

// transport is the HTTP side both providers share: one endpoint, its fixed
// headers, the retry loop and the error mapping. Safe for concurrent use.
type transport struct {
	provider   string
	url        string // the endpoint
	baseURL    string // as configured, for hints
	baseURLVar string // what sets it, for hints
	keyVar     string // what sets the key, for hints
	modelVar   string // what sets the model, for hints
	hasKey     bool   // a key (or an auth header) is sent
	client     *http.Client
	header     http.Header
	maxRetries int
	// jitter returns a fraction in [0, 1) of the backoff's 25 % to take off.
	jitter func() float64
	// apiError decodes an error body into e (Type, Message).
	apiError func(e *Error, body []byte)
}

// open sends body, retrying per the policy, and returns the stream once its
// first event has arrived.
func (t *transport) open(ctx context.Context, body []byte, notify func(RetryInfo), model string, newDecoder func() decoder) (Stream, error) {
	for attempt := 0; ; attempt++ {
		st, err, wait := t.try(ctx, body, attempt, model, newDecoder)
		if err == nil {
			return st, nil
		}
		var e *Error
		if !errors.As(err, &e) {
			return nil, err // the caller's context
		}
		e.Attempts = attempt + 1
		if !e.Retryable || attempt >= t.maxRetries {
			return nil, e
		}
		if wait > MaxRetryWait {
			e.Hint = joinHint(e.Hint, fmt.Sprintf("the server asked to wait %s before retrying, over tackle's limit of %s", seconds(wait), seconds(MaxRetryWait)))
			return nil, e
		}
		if dl, ok := ctx.Deadline(); ok && time.Now().Add(wait).After(dl) {
			e.Hint = joinHint(e.Hint, fmt.Sprintf("a retry in %s would pass the request's deadline, %s away", seconds(wait), seconds(time.Until(dl))))
			e.Err = joinErr(e.Err, context.DeadlineExceeded)
			return nil, e
		}
		if notify != nil {
			notify(RetryInfo{Attempt: attempt + 1, Wait: wait.Seconds(), Status: e.Status, Reason: retryReason(e)})
		}
		if wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				timer.Stop()
				return nil, fmt.Errorf("%s: waiting to retry (%s): %w", t.provider, e.Error(), ctx.Err())
			case <-timer.C:
			}
		}
	}
}

// try makes one attempt; on failure it returns the error (an *Error, or
// the caller's context's) and the wait before a retry.
func (t *transport) try(ctx context.Context, body []byte, attempt int, model string, newDecoder func() decoder) (Stream, error, time.Duration) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", t.provider, err), 0
	}
	rctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, t.url, bytes.NewReader(body))
	if err != nil {
		cancel()
		return nil, &Error{Provider: t.provider, Type: ErrInvalidRequest, Message: err.Error(),
			Hint: fmt.Sprintf("check %s (%q)", t.baseURLVar, t.baseURL), Err: err}, 0
	}
	req.Header = t.header.Clone()
	req.Header.Set("X-Stainless-Retry-Count", strconv.Itoa(attempt))
	resp, err := t.client.Do(req)
	if err != nil {
		cancel()
		if cerr := ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("%s: sending the request: %w", t.provider, cerr), 0
		}
		return nil, t.transportError(err), t.backoff(attempt)
	}
	if resp.StatusCode/100 != 2 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		_ = resp.Body.Close()
		cancel()
		if cerr := ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("%s: reading the error response: %w", t.provider, cerr), 0
		}
		e := t.httpError(resp, data, model)
		return nil, e, t.retryWait(resp.Header, attempt)
	}
	st := newHTTPStream(t.provider, ctx, cancel, resp, newDecoder())
	if err := st.peek(); err != nil {
		_ = st.Close()
		if cerr := ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("%s: reading the stream: %w", t.provider, cerr), 0
		}
		e := &Error{Provider: t.provider, Status: resp.StatusCode, Type: ErrConnection, Retryable: true,
			RequestID: requestID(resp.Header), Err: err}
		if err == io.EOF {
			e.Message = "the response ended before its first event"
			if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct != "text/event-stream" {
				// A server that does not stream will not start to.
				e.Type, e.Retryable = ErrInvalidStream, false
				e.Hint = fmt.Sprintf("the server at %s answered %q, not an event stream: check %s", t.baseURL, ct, t.baseURLVar)
			}
		} else {
			e.Message = "the response broke before its first event: " + err.Error()
		}
		return nil, e, t.backoff(attempt)
	}
	return st, nil, 0
}

// shouldRetry is the policy's verdict on a response.
func shouldRetry(status int, h http.Header) bool {
	switch h.Get("x-should-retry") {
	case "true":
		return true
	case "false":
		return false
	}
	return status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooManyRequests || status >= 500
}

// retryWait is the wait before retry attempt+1 after a response with h.
func (t *transport) retryWait(h http.Header, attempt int) time.Duration {
	if d, ok := serverWait(h, time.Now()); ok {
		return d
	}
	return t.backoff(attempt)
}

// serverWait is the wait the server asked for: retry-after-ms, else
// retry-after (seconds or an HTTP date).
func serverWait(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil && !math.IsNaN(f) {
			return floatDuration(f, time.Millisecond), true
		}
	}
	if v := strings.TrimSpace(h.Get("retry-after")); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil && !math.IsNaN(f) {
			return floatDuration(f, time.Second), true
		}
		if at, err := http.ParseTime(v); err == nil {
			return max(0, at.Sub(now)), true
		}
	}
	return 0, false
}

// floatDuration is f units, at least 0 and at most a day (so that a huge
// value stays a huge wait instead of overflowing).
func floatDuration(f float64, unit time.Duration) time.Duration {
	d := f * float64(unit)
	switch {
	case d <= 0:
		return 0
	case d > float64(24*time.Hour):
		return 24 * time.Hour
	}
	return time.Duration(d)
}

// backoff is 0.5 s·2^attempt capped at 8 s, minus up to 25 % jitter.
func (t *transport) backoff(attempt int) time.Duration {
	d := maxBackoff
	if attempt < 5 {
		d = min(maxBackoff, time.Duration(float64(500*time.Millisecond)*math.Pow(2, float64(attempt))))
	}
	j := t.jitter
	if j == nil {
		j = rand.Float64
	}
	return d - time.Duration(j()*float64(d/4))
}

// retryReason is the short reason a client shows ("retrying in 2.0 s:
// overloaded").
func retryReason(e *Error) string {
	switch {
	case e.Type == "overloaded_error" || e.Status == 529:
		return "overloaded"
	case e.Status == http.StatusTooManyRequests:
		return "rate limited"
	case e.Status == http.StatusRequestTimeout:
		return "request timeout"
	case e.Status == http.StatusConflict:
		return "conflict"
	case e.Status >= 500:
		return fmt.Sprintf("server error (HTTP %d)", e.Status)
	case e.Type == ErrConnection:
		return "connection error: " + e.Message
	}
	if e.Message != "" {
		return e.Message
	}
	return e.Type
}

// transportError maps a failed http.Client.Do (no response).
func (t *transport) transportError(err error) *Error {
	inner := err
	var ue *url.Error
	if errors.As(err, &ue) {
		inner = ue.Err
	}
	e := &Error{Provider: t.provider, Type: ErrConnection, Retryable: true, Err: err,
		Message: fmt.Sprintf("POST %s: %v", t.url, inner)}
	var dns *net.DNSError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	switch {
	case errors.As(err, &dns) && dns.IsNotFound:
		e.Retryable = false
		e.Hint = fmt.Sprintf("the host of %s does not resolve: check %s", t.baseURL, t.baseURLVar)
	case errors.Is(err, syscall.ECONNREFUSED):
		e.Retryable = false
		e.Hint = fmt.Sprintf("nothing listens at %s: check %s, or start the server", t.baseURL, t.baseURLVar)
	case errors.As(err, &verify), errors.As(err, &unknownCA), errors.As(err, &hostErr), errors.As(err, &invalid):
		e.Retryable = false
		e.Hint = fmt.Sprintf("the TLS certificate of %s is not trusted: check %s", t.baseURL, t.baseURLVar)
	}
	return e
}

// httpError maps an error response, with the hints for what a person can
// fix.
func (t *transport) httpError(resp *http.Response, body []byte, model string) *Error {
	e := &Error{Provider: t.provider, Status: resp.StatusCode, RequestID: requestID(resp.Header),
		Retryable: shouldRetry(resp.StatusCode, resp.Header)}
	t.apiError(e, body)
	if e.Message == "" {
		if s := strings.TrimSpace(string(body)); s != "" && len(s) <= 300 && !strings.HasPrefix(s, "<") {
			e.Message = s
		} else {
			e.Message = http.StatusText(resp.StatusCode)
		}
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized && !t.hasKey:
		e.Hint = fmt.Sprintf("the server at %s wants a key: set %s", t.baseURL, t.keyVar)
	case resp.StatusCode == http.StatusUnauthorized:
		e.Hint = fmt.Sprintf("the server at %s rejected the key: check %s", t.baseURL, t.keyVar)
	case resp.StatusCode == http.StatusForbidden:
		e.Hint = fmt.Sprintf("the key may not do this at %s: check %s and the key's permissions", t.baseURL, t.keyVar)
	case unknownModel(e, model):
		e.Hint = fmt.Sprintf("model %q is not known at %s: set %s to an alias or a model id the server serves", model, t.baseURL, t.modelVar)
	case resp.StatusCode == http.StatusNotFound:
		e.Hint = fmt.Sprintf("POST %s was not found: check %s", t.url, t.baseURLVar)
	}
	return e
}

// unknownModel reports whether e says the model does not exist: a 404 that
// mentions the model or its name, or an error whose code says so.
func unknownModel(e *Error, model string) bool {
	if e.Type == "model_not_found" {
		return true
	}
	if e.Status != http.StatusNotFound {
		return false
	}
	m := strings.ToLower(e.Message)
	return strings.Contains(m, "model") || (model != "" && strings.Contains(e.Message, model))
}

func requestID(h http.Header) string {
	if v := h.Get("request-id"); v != "" {
		return v
	}
	return h.Get("x-request-id")
}

func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
}

func joinHint(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func joinErr(a, b error) error {
	if a == nil {
		return b
	}
	return errors.Join(a, b)
}
