package web

import (
	"container/list"
	"sync"
	"time"
)

// page is what WebFetch keeps of one fetched URL.
type page struct {
	// url is the URL the content came from (after same-host redirects).
	url         string
	status      string
	contentType string
	// text is the Markdown (or passed-through text) given to the model.
	text string
	// bytes is the size of the body read; cut is true when it was cut at MaxBytes.
	bytes   int64
	cut     bool
	fetched time.Time
}

// cache is a size-bounded LRU of fetched pages whose entries expire after
// a TTL. It is safe for concurrent use.
type cache struct {
	maxBytes int
	ttl      time.Duration
	now      func() time.Time

	mu    sync.Mutex // guards the fields below
	size  int
	order *list.List // of *cacheEntry, most recently used first
	items map[string]*list.Element
}

type cacheEntry struct {
	key     string
	page    *page
	expires time.Time
}

func newCache(maxBytes int, ttl time.Duration, now func() time.Time) *cache {
	return &cache{maxBytes: maxBytes, ttl: ttl, now: now, order: list.New(), items: map[string]*list.Element{}}
}

func entrySize(key string, p *page) int { return len(key) + len(p.url) + len(p.text) + 128 }

// get returns the unexpired page stored under key.
func (c *cache) get(key string) (*page, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return nil, false
	}
	e := el.Value.(*cacheEntry)
	if !c.now().Before(e.expires) {
		c.removeLocked(el)
		return nil, false
	}
	c.order.MoveToFront(el)
	return e.page, true
}

// put stores p under key, evicting the least recently used entries to stay
// within maxBytes. A page larger than the whole cache is not stored.
func (c *cache) put(key string, p *page) {
	n := entrySize(key, p)
	if n > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.removeLocked(el)
	}
	for c.size+n > c.maxBytes {
		c.removeLocked(c.order.Back())
	}
	c.items[key] = c.order.PushFront(&cacheEntry{key: key, page: p, expires: c.now().Add(c.ttl)})
	c.size += n
}

func (c *cache) removeLocked(el *list.Element) {
	e := el.Value.(*cacheEntry)
	c.order.Remove(el)
	delete(c.items, e.key)
	c.size -= entrySize(e.key, e.page)
}

// len returns the number of entries (expired ones included).
func (c *cache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
