package web

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tackle-agent/tackle/daemon/tool"
)

//go:embed fetch.md
var fetchDescription string

const (
	// maxURLLength is the longest URL WebFetch accepts.
	maxURLLength = 2000
	// maxRedirects bounds the same-host redirects followed in one fetch.
	maxRedirects = 10
	// pageChars is the most characters of content in one result; the rest
	// is read with offset. With the header it stays under maxResultChars.
	pageChars = 40000
	// maxPromptEcho is the most characters of the prompt repeated in the result.
	maxPromptEcho = 1000
)

// Fetch is the WebFetch tool: it reads one http or https URL and returns its
// content as Markdown, paged. It is safe for concurrent use.
type Fetch struct {
	opts   Options
	client *http.Client // opts.HTTPClient, redirects returned instead of followed
	cache  *cache       // nil when caching is off
}

func newFetch(o Options, c *cache) *Fetch {
	client := *o.HTTPClient
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Fetch{opts: o, client: &client, cache: c}
}

var fetchSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "url": {"type": "string", "description": "The URL to fetch content from (http or https)"},
    "prompt": {"type": "string", "description": "What you want to learn from the page"},
    "offset": {"type": "integer", "minimum": 0, "description": "Character offset in the page's content to start from, to read the next page of a long result"}
  },
  "required": ["url", "prompt"],
  "additionalProperties": false
}`)

// Spec implements tool.Tool.
func (f *Fetch) Spec() tool.Spec {
	return tool.Spec{Name: "WebFetch", Description: fetchDescription, InputSchema: fetchSchema}
}

// Attributes implements tool.Tool: read-only and concurrency-safe.
func (f *Fetch) Attributes(json.RawMessage) tool.Attributes { return attributes() }

type fetchInput struct {
	URL    string `json:"url"`
	Prompt string `json:"prompt"`
	Offset int    `json:"offset"`
}

// plan decodes and checks the input; u is the URL to request (http
// upgraded to https for hosts other than loopback).
func (f *Fetch) plan(call *tool.Call) (in fetchInput, u *url.URL, err error) {
	if err := decodeInput(call.Input, &in); err != nil {
		return in, nil, err
	}
	if strings.TrimSpace(in.Prompt) == "" {
		return in, nil, errors.New("prompt is empty; say what you want to learn from the page")
	}
	if in.Offset < 0 {
		return in, nil, fmt.Errorf("offset %d is negative; give a character offset of 0 or more", in.Offset)
	}
	u, err = parseURL(in.URL)
	return in, u, err
}

// parseURL checks a URL given to WebFetch and upgrades http to https
// except for loopback hosts.
func parseURL(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, errors.New("url is empty; give a full URL such as https://example.com/page")
	}
	if len(raw) > maxURLLength {
		return nil, fmt.Errorf("url is %d characters long; WebFetch accepts at most %d", len(raw), maxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("invalid URL %q: %v; give a full URL such as https://example.com/page", raw, unwrapURLError(err))
	}
	u.Scheme = strings.ToLower(u.Scheme)
	switch u.Scheme {
	case "http", "https":
	case "":
		return nil, fmt.Errorf("invalid URL %q: it has no scheme; give a full URL such as https://%s", raw, strings.TrimPrefix(raw, "//"))
	default:
		return nil, fmt.Errorf("URL scheme %q is not supported (%s): WebFetch reads only http and https URLs; use Read for local files", u.Scheme, raw)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("invalid URL %q: it has no host; give a full URL such as https://example.com/page", raw)
	}
	if u.User != nil {
		return nil, fmt.Errorf("URL %q contains credentials; WebFetch does not send user names or passwords", raw)
	}
	if u.Scheme == "http" && !isLoopback(u.Hostname()) {
		u.Scheme = "https"
	}
	u.Fragment, u.RawFragment = "", ""
	return u, nil
}

// Validate implements tool.Tool: the URL must be a valid http or https URL.
func (f *Fetch) Validate(ctx context.Context, call *tool.Call) error {
	_, _, err := f.plan(call)
	return err
}

// CheckPermission implements tool.Tool: network access to the URL's host,
// in Domain (and Command) for WebFetch(domain:…) rules.
func (f *Fetch) CheckPermission(ctx context.Context, call *tool.Call) (tool.Access, error) {
	_, u, err := f.plan(call)
	if err != nil {
		return tool.Access{}, err
	}
	d := domainOf(u)
	return tool.Access{Kind: tool.AccessNetwork, Command: d, Domain: d}, nil
}

// Run implements tool.Tool.
func (f *Fetch) Run(ctx context.Context, call *tool.Call, _ tool.Progress) (*tool.Result, error) {
	in, u, err := f.plan(call)
	if err != nil {
		return tool.ErrorResult(err.Error()), nil
	}
	key := u.String()
	p, cached := (*page)(nil), false
	if f.cache != nil {
		p, cached = f.cache.get(key)
	}
	if !cached {
		var redir *redirect
		p, redir, err = f.fetch(ctx, u)
		if err != nil {
			return tool.ErrorResult(err.Error()), nil
		}
		if redir != nil {
			return redir.result(in.Prompt), nil
		}
		if f.cache != nil {
			f.cache.put(key, p)
		}
	}
	res := f.render(p, key, in, cached)
	if f.opts.Ask == nil || res.IsError {
		return res, nil
	}
	page := res.Content[0].Text
	answer, err := f.opts.Ask(ctx, call.Env, fetchSystem, "Web page content:\n---\n"+page+"\n---\n\n"+in.Prompt)
	if err != nil || strings.TrimSpace(answer) == "" {
		f.opts.Logger.Debug("the small model did not answer WebFetch's prompt; returning the page", "url", key, "error", err)
		return res, nil
	}
	res.Content[0].Text = fmt.Sprintf("URL: %s\n\n%s", p.url, strings.TrimSpace(answer))
	return res, nil
}

// fetchSystem tells the small model how to answer WebFetch's prompt.
const fetchSystem = "You answer a question about one web page for a coding agent, from the page's content only. Be concise and exact: quote code, commands, versions and error texts as they appear. If the page does not answer the question, say so."

// redirect is a redirect to another host, reported instead of followed.
type redirect struct {
	from, to *url.URL
	status   string
}

func (r *redirect) result(prompt string) *tool.Result {
	res := tool.TextResult(fmt.Sprintf("REDIRECT DETECTED: The URL redirects to a different host.\n\n"+
		"Original URL: %s\nRedirect URL: %s\nStatus: %s\n\n"+
		"To complete your request, I need to fetch content from the redirected URL. "+
		"Please use WebFetch again with these parameters:\n- url: %q\n- prompt: %q",
		r.from, r.to, r.status, r.to.String(), prompt))
	res.Display = fmt.Sprintf("Redirected to %s (not followed)", r.to.Host)
	return res
}

// fetch requests u, following same-host redirects, and reads the page.
// A redirect to another host is returned instead of followed.
func (f *Fetch) fetch(ctx context.Context, u *url.URL) (*page, *redirect, error) {
	ctx, cancel := withTimeout(ctx, f.opts.Timeout)
	defer cancel()
	cur := u
	for hops := 0; ; hops++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cur.String(), nil)
		if err != nil {
			return nil, nil, fmt.Errorf("fetching %s: %v", cur, err)
		}
		req.Header.Set("User-Agent", userAgent)
		req.Header.Set("Accept", "text/markdown, text/html, application/xhtml+xml, text/plain;q=0.9, application/json;q=0.9, */*;q=0.8")
		f.opts.Logger.Debug("fetching", "url", cur.String())
		resp, err := f.client.Do(req)
		if err != nil {
			return nil, nil, fmt.Errorf("fetching %s: %s", cur, describeNetError(ctx, err, cur, f.opts.Timeout))
		}
		if !isRedirect(resp.StatusCode) {
			p, err := f.read(ctx, cur, resp)
			return p, nil, err
		}
		loc := resp.Header.Get("Location")
		_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
		resp.Body.Close()
		if loc == "" {
			return nil, nil, fmt.Errorf("fetching %s: HTTP %s without a Location header", cur, resp.Status)
		}
		next, err := cur.Parse(loc)
		if err != nil {
			return nil, nil, fmt.Errorf("fetching %s: HTTP %s to an invalid Location %q: %v", cur, resp.Status, loc, unwrapURLError(err))
		}
		next.Fragment, next.RawFragment = "", ""
		if next.Scheme != "http" && next.Scheme != "https" {
			return nil, nil, fmt.Errorf("fetching %s: redirected to %s, whose scheme %q WebFetch does not read", cur, next, next.Scheme)
		}
		if !sameHost(cur, next) {
			return nil, &redirect{from: cur, to: next, status: resp.Status}, nil
		}
		if hops >= maxRedirects {
			return nil, nil, fmt.Errorf("fetching %s: more than %d redirects (last to %s); the server may be redirecting in a loop", u, maxRedirects, next)
		}
		cur = next
	}
}

func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// sameHost reports whether a redirect from a to b stays on the same host:
// the same host name (ignoring a leading "www.") and port, or an upgrade
// from http to https on the default ports.
func sameHost(a, b *url.URL) bool {
	ha := strings.TrimPrefix(strings.ToLower(a.Hostname()), "www.")
	hb := strings.TrimPrefix(strings.ToLower(b.Hostname()), "www.")
	if ha != hb {
		return false
	}
	if a.Scheme == b.Scheme {
		return port(a) == port(b)
	}
	return a.Scheme == "http" && b.Scheme == "https" && port(a) == "80" && port(b) == "443"
}

func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "http" {
		return "80"
	}
	return "443"
}

// read turns a final (non-redirect) response into a page, or an error for
// a non-2xx status or an unsupported content type. It closes the body.
func (f *Fetch) read(ctx context.Context, u *url.URL, resp *http.Response) (*page, error) {
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("HTTP %s for %s", resp.Status, u)
	}
	ct := resp.Header.Get("Content-Type")
	mt, _ := mediaType(ct)
	if mt != "" && classify(mt) == kindUnsupported {
		return nil, unsupported(mt, u)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.opts.MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %s", u, describeNetError(ctx, err, u, f.opts.Timeout))
	}
	cut := int64(len(body)) > f.opts.MaxBytes
	if cut {
		body = body[:f.opts.MaxBytes]
	}
	if mt == "" {
		mt = sniff(body)
		if classify(mt) == kindUnsupported {
			return nil, unsupported(mt, u)
		}
	}
	k := classify(mt)
	text := toUTF8(body, ct, k)
	switch k {
	case kindHTML:
		text, err = htmlToMarkdown(ctx, text, u.String())
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", u, err)
		}
	case kindJSON:
		if !cut {
			text = prettyJSON(text)
		}
	}
	return &page{
		url:         u.String(),
		status:      resp.Status,
		contentType: mt,
		text:        text,
		bytes:       int64(len(body)),
		cut:         cut,
		fetched:     time.Now(),
	}, nil
}

func unsupported(mt string, u *url.URL) error {
	return fmt.Errorf("%s has content type %s, which WebFetch cannot read: it reads HTML, text and JSON", u, mt)
}

// render makes the model's result: a header with the prompt and the URL,
// one page of the content, and how to read the next page.
func (f *Fetch) render(p *page, requested string, in fetchInput, cached bool) *tool.Result {
	total := utf8.RuneCountInString(p.text)
	if in.Offset > 0 && in.Offset >= total {
		return tool.ErrorResult(fmt.Sprintf("offset %d is past the end of the content of %s (%d characters); use an offset below %d", in.Offset, p.url, total, total))
	}
	start := byteIndex(p.text, 0, in.Offset)
	end := byteIndex(p.text, start, pageChars)
	last := in.Offset + utf8.RuneCountInString(p.text[start:end])

	var b strings.Builder
	prompt := in.Prompt
	if utf8.RuneCountInString(prompt) > maxPromptEcho {
		prompt = string([]rune(prompt)[:maxPromptEcho]) + "…"
	}
	how := "fetched " + p.fetched.UTC().Format(time.RFC3339)
	if cached {
		how += ", from cache"
	}
	fmt.Fprintf(&b, "Prompt: %s\nURL: %s (%s)\n", prompt, p.url, how)
	if p.url != requested {
		fmt.Fprintf(&b, "Redirected from: %s\n", requested)
	}
	if p.cut {
		fmt.Fprintf(&b, "[Content cut: the response is larger than %s; only the first %s were read.]\n", sizeString(f.opts.MaxBytes), sizeString(f.opts.MaxBytes))
	}
	if in.Offset > 0 || end < len(p.text) {
		fmt.Fprintf(&b, "[Showing characters %d to %d of %d.]\n", in.Offset, last, total)
	}
	b.WriteString("Answer the prompt from the content below.\n\n")
	if strings.TrimSpace(p.text) == "" {
		b.WriteString("(the page has no text content)")
	} else {
		b.WriteString(p.text[start:end])
	}
	if end < len(p.text) {
		fmt.Fprintf(&b, "\n\n[Content truncated due to length: %d more characters. To read on, call WebFetch again with the same url and offset: %d.]", total-last, last)
	}
	res := tool.TextResult(b.String())
	res.Display = fmt.Sprintf("Received %s (%s)", sizeString(p.bytes), p.status)
	if cached {
		res.Display += " from cache"
	}
	return res
}

// byteIndex returns the byte index n runes after byte index from in s (or len(s)).
func byteIndex(s string, from, n int) int {
	i := from
	for ; n > 0 && i < len(s); n-- {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return i
}

// sizeString renders a byte count: "512 B", "12.3 KB", "10 MB".
func sizeString(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/(1<<10)), ".0") + " KB"
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/(1<<20)), ".0") + " MB"
}
