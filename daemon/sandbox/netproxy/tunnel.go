package netproxy

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// bufPool holds the copy buffers of tunnels, two per tunnel.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// tunnel is one spliced pair of connections.
type tunnel struct {
	client, up net.Conn
	last       atomic.Int64 // UnixNano of the last read either way
}

// splice copies bytes both ways between client and up until both sides
// have finished (a half-close is passed on), either fails, the tunnel is
// idle for IdleTimeout, or the Server closes. It closes both.
func (s *Server) splice(client, up net.Conn, early []byte) {
	defer client.Close()
	defer up.Close()
	if len(early) > 0 {
		if _, err := up.Write(early); err != nil {
			return
		}
	}
	t := &tunnel{client: client, up: up}
	t.touch()
	done := make(chan struct{})
	defer close(done)
	if idle := s.opts.IdleTimeout; idle > 0 {
		go t.watch(idle, done)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t.pipe(up, client)
	}()
	t.pipe(client, up)
	wg.Wait()
}

// pipe copies src to dst. At src's EOF it half-closes dst, so the other
// direction can finish; on an error it closes both.
func (t *tunnel) pipe(dst, src net.Conn) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	var err error
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			t.touch()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				err = werr
				break
			}
		}
		if rerr != nil {
			if !errors.Is(rerr, io.EOF) {
				err = rerr
			}
			break
		}
	}
	if err == nil {
		if cw, ok := dst.(closeWriter); ok && cw.CloseWrite() == nil {
			return
		}
	}
	t.client.Close()
	t.up.Close()
}

func (t *tunnel) touch() { t.last.Store(time.Now().UnixNano()) }

// watch closes the tunnel once nothing was read either way for idle.
func (t *tunnel) watch(idle time.Duration, done <-chan struct{}) {
	timer := time.NewTimer(idle)
	defer timer.Stop()
	for {
		select {
		case <-done:
			return
		case <-timer.C:
			since := time.Since(time.Unix(0, t.last.Load()))
			if since >= idle {
				t.client.Close()
				t.up.Close()
				return
			}
			timer.Reset(idle - since)
		}
	}
}
