package web

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// clock is a manual clock for cache expiry.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestCacheExpiry(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	c := newCache(1<<20, 15*time.Minute, clk.now)
	c.put("u", &page{text: "content"})
	clk.t = clk.t.Add(15*time.Minute - time.Second)
	if p, ok := c.get("u"); !ok || p.text != "content" {
		t.Fatalf("get before expiry = %v, %v", p, ok)
	}
	clk.t = clk.t.Add(time.Second)
	if _, ok := c.get("u"); ok {
		t.Fatal("entry still served after its TTL")
	}
	if n := c.len(); n != 0 {
		t.Fatalf("expired entry kept: %d entries", n)
	}
}

func TestCacheLRU(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	body := strings.Repeat("x", 1000)
	one := entrySize("k0", &page{text: body})
	c := newCache(3*one, time.Hour, clk.now)
	for i := range 3 {
		c.put(fmt.Sprint("k", i), &page{text: body})
	}
	c.get("k0")                    // k1 is now the least recently used
	c.put("k3", &page{text: body}) // evicts k1
	for key, want := range map[string]bool{"k0": true, "k1": false, "k2": true, "k3": true} {
		if _, ok := c.get(key); ok != want {
			t.Errorf("after eviction, %s cached = %v, want %v", key, ok, want)
		}
	}
	if c.size > c.maxBytes {
		t.Errorf("cache holds %d bytes, over its %d", c.size, c.maxBytes)
	}
	// Replacing an entry does not count it twice; a page larger than the cache is not kept.
	c.put("k3", &page{text: body})
	if c.size != 3*one {
		t.Errorf("size after replacing = %d, want %d", c.size, 3*one)
	}
	c.put("huge", &page{text: strings.Repeat("y", 4*one)})
	if _, ok := c.get("huge"); ok || c.len() != 3 {
		t.Errorf("a page larger than the cache was stored (or evicted others): %d entries", c.len())
	}
}
