package web_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/daemon/tool/tooltest"
	"github.com/tackle-agent/tackle/daemon/tools/web"
)

func fetch(url string) map[string]any {
	return map[string]any{"url": url, "prompt": "What does the page say?"}
}

const htmlPage = `<!DOCTYPE html>
<html><head><title>Docs</title><style>body{color:red}</style><script>var secret = "do not show";</script></head>
<body>
<h1>Release notes</h1>
<p>See the <a href="/docs/install">install guide</a> and <a href="https://example.org/x">the spec</a>.</p>
<table>
  <thead><tr><th>Version</th><th>Date</th></tr></thead>
  <tbody><tr><td>1.2.0</td><td>2026-01-05</td></tr><tr><td>1.3.0</td><td>2026-03-10</td></tr></tbody>
</table>
<pre><code class="language-go">func main() {
	fmt.Println("hi")
}</code></pre>
<ul><li>one</li><li>two</li></ul>
</body></html>`

func TestFetchHTML(t *testing.T) {
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, htmlPage)
	}))
	tl := tools(t, nil)
	o := mustOK(t, call(t, tl, tooltest.New(t), "WebFetch", fetch(srv.URL+"/notes")))
	got := o.Text()
	mustContain(t, got,
		"Prompt: What does the page say?\nURL: "+srv.URL+"/notes (fetched ",
		"# Release notes",
		"[install guide]("+srv.URL+"/docs/install)",
		"[the spec](https://example.org/x)",
		"| Version | Date       |",
		"| 1.2.0   | 2026-01-05 |",
		"```go\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n```",
		"- one\n- two",
	)
	if strings.Contains(got, "do not show") || strings.Contains(got, "color:red") {
		t.Errorf("script or style content leaked into the Markdown:\n%s", got)
	}
	if !strings.Contains(got, "|---") && !strings.Contains(got, "| ---") {
		t.Errorf("no Markdown table separator row:\n%s", got)
	}
	if o.Access.Kind != tool.AccessNetwork || o.Access.Command != "127.0.0.1" || o.Access.InsideWorkingDirs {
		t.Errorf("access = %+v, want network to 127.0.0.1 outside the working dirs", o.Access)
	}
	if o.Res.Display == "" || !strings.Contains(o.Res.Display, "200 OK") {
		t.Errorf("display = %q, want the size and status", o.Res.Display)
	}
}

func TestFetchAttributes(t *testing.T) {
	for _, tl := range web.Tools(nil) {
		a := tl.Attributes(nil)
		if !a.ReadOnly || !a.ConcurrencySafe || a.Origin != tool.OriginBuiltin {
			t.Errorf("%s attributes = %+v, want read-only, concurrency-safe, builtin", tl.Spec().Name, a)
		}
		if a.MaxResultChars <= 0 || a.MaxResultChars > 50000 {
			t.Errorf("%s MaxResultChars = %d, want within the pipeline's 50000", tl.Spec().Name, a.MaxResultChars)
		}
		if len(tl.Spec().Description) < 200 {
			t.Errorf("%s has no description", tl.Spec().Name)
		}
	}
}

func TestFetchRedirects(t *testing.T) {
	other := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "other host")
	}))
	// Same IP, another host name: localhost instead of 127.0.0.1.
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1) + "/landing"
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/a":
			http.Redirect(w, r, "/b", http.StatusFound)
		case "/b":
			http.Redirect(w, r, "final?x=1", http.StatusMovedPermanently)
		case "/final":
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "arrived with x="+r.URL.Query().Get("x"))
		case "/away":
			http.Redirect(w, r, otherURL, http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusTemporaryRedirect)
		case "/nolocation":
			w.WriteHeader(http.StatusFound)
		}
	}))
	tl := tools(t, nil)
	env := tooltest.New(t)

	o := mustOK(t, call(t, tl, env, "WebFetch", fetch(srv.URL+"/a")))
	mustContain(t, o.Text(), "arrived with x=1", "URL: "+srv.URL+"/final?x=1", "Redirected from: "+srv.URL+"/a")

	o = mustOK(t, call(t, tl, env, "WebFetch", fetch(srv.URL+"/away")))
	mustContain(t, o.Text(), "REDIRECT DETECTED", "Original URL: "+srv.URL+"/away", "Redirect URL: "+otherURL,
		"Please use WebFetch again with these parameters", `url: "`+otherURL+`"`, `prompt: "What does the page say?"`)
	if n := other.hits.Load(); n != 0 {
		t.Errorf("the other host got %d requests, want 0 (redirect must not be followed)", n)
	}

	mustFail(t, call(t, tl, env, "WebFetch", fetch(srv.URL+"/loop")), "more than 10 redirects")
	mustFail(t, call(t, tl, env, "WebFetch", fetch(srv.URL+"/nolocation")), "without a Location header")
}

// recordingTransport records the URLs requested and fails every request.
type recordingTransport struct {
	mu   sync.Mutex
	urls []string
}

var errNoNetwork = errors.New("no network in this test")

func (rt *recordingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.urls = append(rt.urls, r.URL.String())
	return nil, errNoNetwork
}

func TestFetchUpgradesHTTP(t *testing.T) {
	for _, tc := range []struct{ in, want, host string }{
		{"http://example.com/page?q=1#frag", "https://example.com/page?q=1", "example.com"},
		{"HTTP://Docs.Example.com:8080/x", "https://Docs.Example.com:8080/x", "docs.example.com"},
		{"https://example.com/", "https://example.com/", "example.com"},
		{"http://localhost:9/x", "http://localhost:9/x", "localhost"},
		{"http://127.0.0.2:9/x", "http://127.0.0.2:9/x", "127.0.0.2"},
		{"http://[::1]:9/x", "http://[::1]:9/x", "::1"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			rt := &recordingTransport{}
			tl := tools(t, &web.Options{HTTPClient: &http.Client{Transport: rt}})
			o := call(t, tl, tooltest.New(t), "WebFetch", fetch(tc.in))
			mustFail(t, o, "no network in this test")
			if len(rt.urls) != 1 || rt.urls[0] != tc.want {
				t.Errorf("requested %q, want [%q]", rt.urls, tc.want)
			}
			if o.Access.Command != tc.host {
				t.Errorf("access command = %q, want %q", o.Access.Command, tc.host)
			}
		})
	}
}

func TestFetchTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<p>over <b>TLS</b></p>")
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the untrusting client's handshake error
	srv.StartTLS()
	t.Cleanup(srv.Close)
	tl := tools(t, &web.Options{HTTPClient: srv.Client()})
	o := mustOK(t, call(t, tl, tooltest.New(t), "WebFetch", fetch(srv.URL+"/secure")))
	mustContain(t, o.Text(), "over **TLS**", "URL: https://127.0.0.1:")

	// Without trust in the test certificate the fetch fails with a clear error.
	tl = tools(t, nil)
	mustFail(t, call(t, tl, tooltest.New(t), "WebFetch", fetch(srv.URL+"/secure")), "request to "+strings.TrimPrefix(srv.URL, "https://"), "certificate")
}

func TestFetchStatus(t *testing.T) {
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/missing":
			http.NotFound(w, r)
		case "/broken":
			http.Error(w, "boom", http.StatusInternalServerError)
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	tl := tools(t, nil)
	env := tooltest.New(t)
	mustFail(t, call(t, tl, env, "WebFetch", fetch(srv.URL+"/missing")), "HTTP 404 Not Found for "+srv.URL+"/missing")
	mustFail(t, call(t, tl, env, "WebFetch", fetch(srv.URL+"/broken")), "HTTP 500 Internal Server Error for "+srv.URL+"/broken")
	o := mustOK(t, call(t, tl, env, "WebFetch", fetch(srv.URL+"/empty")))
	mustContain(t, o.Text(), "(the page has no text content)")
}

func TestFetchLargeBody(t *testing.T) {
	const size = 11 << 20
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		line := strings.Repeat("x", 1023) + "\n"
		for i := 0; i < size/len(line); i++ {
			if _, err := fmt.Fprint(w, line); err != nil {
				return // the client stopped reading
			}
		}
	}))
	tl := tools(t, nil)
	o := mustOK(t, call(t, tl, tooltest.New(t), "WebFetch", fetch(srv.URL+"/big")))
	mustContain(t, o.Text(),
		"[Content cut: the response is larger than 10 MB; only the first 10 MB were read.]",
		fmt.Sprintf("[Showing characters 0 to 40000 of %d.]", 10<<20),
		"To read on, call WebFetch again with the same url and offset: 40000.")
	if n := utf8.RuneCountInString(o.Text()); n > 50000 {
		t.Errorf("result has %d characters, over the pipeline's 50000", n)
	}
}

func TestFetchTimeout(t *testing.T) {
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/trickle" {
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "first bytes")
			w.(http.Flusher).Flush()
		}
		<-r.Context().Done()
	}))
	host := strings.TrimPrefix(srv.URL, "http://")
	tl := tools(t, &web.Options{Timeout: 300 * time.Millisecond})
	env := tooltest.New(t)
	mustFail(t, call(t, tl, env, "WebFetch", fetch(srv.URL+"/slow")),
		"fetching "+srv.URL+"/slow: "+host+" did not answer within 300ms (timed out)")
	mustFail(t, call(t, tl, env, "WebFetch", fetch(srv.URL+"/trickle")),
		"reading "+srv.URL+"/trickle: "+host+" did not answer within 300ms (timed out)")
}

func TestFetchCancelled(t *testing.T) {
	started := make(chan struct{})
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
	}))
	tl := tools(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	c := &tool.Call{ID: "c", Name: "WebFetch", Input: []byte(`{"url":"` + srv.URL + `","prompt":"p"}`), Env: tooltest.New(t)}
	res, err := tl["WebFetch"].Run(ctx, c, nil)
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].Text, "was cancelled") {
		t.Fatalf("Run = %+v, %v; want an error result saying the request was cancelled", res, err)
	}
}

func TestFetchUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	tl := tools(t, nil)
	mustFail(t, call(t, tl, tooltest.New(t), "WebFetch", fetch("http://"+addr+"/")),
		"cannot connect to "+addr, "connection refused")
}

func TestFetchContentTypes(t *testing.T) {
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		set := func(ct string) {
			if ct == "" {
				w.Header()["Content-Type"] = nil // no header, no sniffing by net/http
			} else {
				w.Header().Set("Content-Type", ct)
			}
		}
		switch r.URL.Path {
		case "/json":
			set("application/json")
			fmt.Fprint(w, `{"name":"tackle","tags":["a","b"]}`)
		case "/problem":
			set("application/problem+json")
			fmt.Fprint(w, `{"title":"x"}`)
		case "/badjson":
			set("application/json")
			fmt.Fprint(w, `{"name": tackle`)
		case "/text":
			set("text/plain; charset=utf-8")
			fmt.Fprint(w, "# not a heading\n*stars* stay <b>as is</b>")
		case "/latin1":
			set("text/plain; charset=iso-8859-1")
			w.Write([]byte("caf\xe9"))
		case "/markdown":
			set("text/markdown")
			fmt.Fprint(w, "## Title\n\n- item")
		case "/xml":
			set("application/rss+xml")
			fmt.Fprint(w, "<rss><channel><title>Feed</title></channel></rss>")
		case "/png":
			set("image/png")
			w.Write([]byte("\x89PNG\r\n\x1a\n"))
		case "/pdf":
			set("application/pdf")
			fmt.Fprint(w, "%PDF-1.4")
		case "/octet":
			set("application/octet-stream")
			w.Write([]byte{0, 1, 2})
		case "/untyped-html":
			set("")
			fmt.Fprint(w, "<html><body><h2>Sniffed</h2></body></html>")
		case "/untyped-binary":
			set("")
			w.Write([]byte("\x00\x01\x02\x03binary"))
		}
	}))
	tl := tools(t, nil)
	env := tooltest.New(t)
	for _, tc := range []struct {
		path string
		want string // in the result
		fail bool
	}{
		{"/json", "{\n  \"name\": \"tackle\",\n  \"tags\": [\n    \"a\",\n    \"b\"\n  ]\n}", false},
		{"/problem", "\"title\": \"x\"", false},
		{"/badjson", `{"name": tackle`, false},
		{"/text", "# not a heading\n*stars* stay <b>as is</b>", false},
		{"/latin1", "café", false},
		{"/markdown", "## Title\n\n- item", false},
		{"/xml", "<title>Feed</title>", false},
		{"/untyped-html", "## Sniffed", false},
		{"/png", "content type image/png, which WebFetch cannot read", true},
		{"/pdf", "content type application/pdf", true},
		{"/octet", "content type application/octet-stream", true},
		{"/untyped-binary", "content type application/octet-stream", true},
	} {
		t.Run(tc.path, func(t *testing.T) {
			o := call(t, tl, env, "WebFetch", fetch(srv.URL+tc.path))
			if tc.fail {
				mustFail(t, o, tc.want, srv.URL+tc.path)
				return
			}
			mustContain(t, mustOK(t, o).Text(), tc.want)
		})
	}
}

func TestFetchPaging(t *testing.T) {
	// 100,000 characters, many of them two bytes long: offsets count characters.
	var sb strings.Builder
	for i := 0; sb.Len() < 150000; i++ {
		fmt.Fprintf(&sb, "ligne %05d: été\n", i)
	}
	content := string([]rune(sb.String())[:100000])
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, content)
	}))
	tl := tools(t, nil)
	env := tooltest.New(t)
	var got strings.Builder
	offset := 0
	for page := 0; ; page++ {
		if page > 5 {
			t.Fatal("paging does not end")
		}
		in := fetch(srv.URL + "/long")
		if offset > 0 {
			in["offset"] = offset
		}
		text := mustOK(t, call(t, tl, env, "WebFetch", in)).Text()
		if n := utf8.RuneCountInString(text); n > 50000 {
			t.Fatalf("page %d has %d characters, over the pipeline's 50000", page, n)
		}
		_, body, ok := strings.Cut(text, "Answer the prompt from the content below.\n\n")
		if !ok {
			t.Fatalf("page %d has no content marker:\n%.500s", page, text)
		}
		next := 0
		if i := strings.Index(body, "\n\n[Content truncated due to length:"); i >= 0 {
			if _, err := fmt.Sscanf(body[strings.LastIndex(body, "offset: "):], "offset: %d.", &next); err != nil {
				t.Fatalf("page %d: no next offset: %v", page, err)
			}
			body = body[:i]
		}
		mustContain(t, text, fmt.Sprintf("[Showing characters %d to ", offset))
		got.WriteString(body)
		if next == 0 {
			break
		}
		if next <= offset {
			t.Fatalf("next offset %d does not advance from %d", next, offset)
		}
		offset = next
	}
	if got.String() != content {
		t.Errorf("the pages put together differ from the content (%d vs %d characters)", utf8.RuneCountInString(got.String()), 100000)
	}
	if n := srv.hits.Load(); n != 1 {
		t.Errorf("server got %d requests for %d pages, want 1 (pages come from the cache)", n, 3)
	}
	in := fetch(srv.URL + "/long")
	in["offset"] = 100000
	mustFail(t, call(t, tl, env, "WebFetch", in), "offset 100000 is past the end", "(100000 characters)")
	in["offset"] = -1
	mustFail(t, call(t, tl, env, "WebFetch", in), "offset")
}

func TestFetchCache(t *testing.T) {
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<p>page %s</p>", r.URL.Path)
	}))
	env := tooltest.New(t)

	tl := tools(t, nil)
	first := mustOK(t, call(t, tl, env, "WebFetch", fetch(srv.URL+"/a")))
	second := mustOK(t, call(t, tl, env, "WebFetch", map[string]any{"url": srv.URL + "/a#section", "prompt": "another question"}))
	if n := srv.hits.Load(); n != 1 {
		t.Fatalf("server got %d requests for two fetches of one URL, want 1", n)
	}
	if strings.Contains(first.Text(), "from cache") || !strings.Contains(second.Text(), "from cache") {
		t.Errorf("only the second result should say it came from the cache:\n%s\n---\n%s", first.Text(), second.Text())
	}
	mustContain(t, second.Text(), "Prompt: another question", "page /a")
	mustOK(t, call(t, tl, env, "WebFetch", fetch(srv.URL+"/b")))
	if n := srv.hits.Load(); n != 2 {
		t.Fatalf("server got %d requests after fetching another URL, want 2", n)
	}

	// A negative CacheTTL turns the cache off; errors are never cached.
	srv.hits.Store(0)
	tl = tools(t, &web.Options{CacheTTL: -1})
	mustOK(t, call(t, tl, env, "WebFetch", fetch(srv.URL+"/a")))
	mustOK(t, call(t, tl, env, "WebFetch", fetch(srv.URL+"/a")))
	if n := srv.hits.Load(); n != 2 {
		t.Fatalf("server got %d requests with the cache off, want 2", n)
	}
}

func TestFetchBadInput(t *testing.T) {
	tl := tools(t, &web.Options{HTTPClient: &http.Client{Transport: &recordingTransport{}}})
	env := tooltest.New(t)
	for _, tc := range []struct {
		name  string
		input map[string]any
		want  []string
	}{
		{"file", fetch("file:///etc/passwd"), []string{`scheme "file" is not supported`, "Read"}},
		{"ftp", fetch("ftp://ftp.example.com/pub/x"), []string{`scheme "ftp" is not supported`}},
		{"data", fetch("data:text/plain,hello"), []string{`scheme "data" is not supported`}},
		{"javascript", fetch("javascript:alert(1)"), []string{`scheme "javascript"`}},
		{"no scheme", fetch("example.com/page"), []string{"has no scheme", "https://example.com/page"}},
		{"no host", fetch("http:///path"), []string{"has no host"}},
		{"unparsable", fetch("http://exa mple.com/"), []string{"invalid URL"}},
		{"bad port", fetch("https://example.com:port/"), []string{"invalid URL"}},
		{"empty", fetch(""), []string{"url is empty"}},
		{"credentials", fetch("https://user:secret@example.com/"), []string{"credentials"}},
		{"too long", fetch("https://example.com/" + strings.Repeat("a", 2100)), []string{"at most 2000"}},
		{"empty prompt", map[string]any{"url": "https://example.com", "prompt": " "}, []string{"prompt is empty"}},
		{"no prompt", map[string]any{"url": "https://example.com"}, []string{"prompt"}},
		{"unknown field", map[string]any{"url": "https://example.com", "prompt": "p", "max": 3}, []string{"max"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustFail(t, call(t, tl, env, "WebFetch", tc.input), tc.want...)
		})
	}
}

func TestFetchConcurrent(t *testing.T) {
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<h1>%s</h1>", r.URL.Path)
	}))
	tl := tools(t, nil)["WebFetch"]
	env := tooltest.New(t)
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for i := range 16 {
		wg.Go(func() {
			path := fmt.Sprintf("/p%d", i%4)
			c := &tool.Call{ID: "c", Name: "WebFetch", Input: []byte(`{"url":"` + srv.URL + path + `","prompt":"p"}`), Env: env}
			res, err := tl.Run(context.Background(), c, nil)
			if err != nil || res.IsError || !strings.Contains(res.Content[0].Text, "# "+path) {
				errs <- fmt.Sprintf("%s: %+v %v", path, res, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if n := srv.hits.Load(); n < 4 || n > 16 {
		t.Errorf("server got %d requests for 16 fetches of 4 URLs", n)
	}
}
