package netproxy

import (
	"io"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"
)

// BenchmarkProxiedLoopbackGET measures what the sandbox's way out adds to
// an HTTP GET of a loopback server: through the bridge (TCP) and the proxy
// (unix socket, a Decider call, a pooled upstream connection) against the
// same GET made directly. Each iteration makes four GETs: proxied and
// direct on a new connection each (what a curl or pip process does), and
// proxied and direct on a kept-alive one. The goal is ≤ 5 ms added.
func BenchmarkProxiedLoopbackGET(b *testing.B) {
	f := newFixture(b)
	proxy, err := url.Parse(f.proxyURL())
	if err != nil {
		b.Fatal(err)
	}
	type run struct {
		metric string
		client *http.Client
		url    string
		took   []time.Duration
	}
	client := func(proxied, keepAlive bool) *http.Client {
		tr := &http.Transport{DisableKeepAlives: !keepAlive}
		if proxied {
			tr.Proxy = http.ProxyURL(proxy)
		}
		b.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr}
	}
	runs := []*run{
		{metric: "proxied-p50-µs", client: client(true, false), url: "http://allowed.test/bench"},
		{metric: "direct-p50-µs", client: client(false, false), url: f.backend.URL + "/bench"},
		{metric: "proxied-keepalive-p50-µs", client: client(true, true), url: "http://allowed.test/bench"},
		{metric: "direct-keepalive-p50-µs", client: client(false, true), url: f.backend.URL + "/bench"},
	}
	get := func(r *run) {
		start := time.Now()
		resp, err := r.client.Get(r.url)
		if err != nil {
			b.Fatal(err)
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %s %v", r.url, resp.Status, err)
		}
		r.took = append(r.took, time.Since(start))
	}
	for _, r := range runs { // warm up: connections, pools, code paths
		get(r)
		r.took = r.took[:0]
	}
	for b.Loop() {
		for _, r := range runs {
			get(r)
		}
	}
	for _, r := range runs {
		slices.Sort(r.took)
		p50 := r.took[len(r.took)/2]
		b.ReportMetric(float64(p50.Nanoseconds())/1e3, r.metric)
	}
}
