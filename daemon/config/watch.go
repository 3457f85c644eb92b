package config

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/fsnotify/fsnotify"
)

// Run watches the directories of every source consulted by Load (before or
// while Run runs) and re-reads a settings file when it changes, sending its
// path on Changes. A source directory that does not exist yet is watched
// through its parent, so creating it (e.g. a project's .tackle) is noticed.
// Run blocks until ctx ends, then closes Changes and returns nil. It may be
// called once.
func (l *Loader) Run(ctx context.Context) error {
	l.mu.Lock()
	if l.running {
		l.mu.Unlock()
		return errors.New("config: Loader.Run called twice")
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		l.mu.Unlock()
		return fmt.Errorf("watching settings files: %w", err)
	}
	l.running = true
	l.addReq = make(chan chan struct{})
	l.done = make(chan struct{})
	addReq, done := l.addReq, l.done
	l.mu.Unlock()

	defer func() {
		w.Close()
		l.mu.Lock()
		l.addReq = nil
		l.mu.Unlock()
		close(done)
		close(l.changes)
	}()

	// watched maps each directory we added to the watcher.
	watched := map[string]bool{}
	sync := func() {
		l.mu.Lock()
		dirs := make([]string, 0, len(l.dirs))
		for d := range l.dirs {
			dirs = append(dirs, d)
		}
		l.mu.Unlock()
		for _, d := range dirs {
			if watched[d] {
				continue
			}
			if err := w.Add(d); err == nil {
				watched[d] = true
				continue
			}
			// Not there (yet): watch the parent to see it appear.
			if p := filepath.Dir(d); !watched[p] {
				if err := w.Add(p); err == nil {
					watched[p] = true
				}
			}
		}
	}
	isWanted := func(dir string) bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.dirs[dir]
	}
	knownFiles := func(dir string) []string {
		l.mu.Lock()
		defer l.mu.Unlock()
		var out []string
		for p := range l.files {
			if filepath.Dir(p) == dir {
				out = append(out, p)
			}
		}
		return out
	}

	sync()
	close(l.ready)
	for {
		select {
		case <-ctx.Done():
			return nil
		case ack := <-addReq:
			sync()
			close(ack)
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			l.opts.Logger.Warn("watching settings files", "error", err)
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if ev.Op == fsnotify.Chmod {
				continue
			}
			name := filepath.Clean(ev.Name)
			if l.invalidate(name) {
				l.emit(name)
			}
			if watched[name] && ev.Op.Has(fsnotify.Remove|fsnotify.Rename) {
				// A watched directory went away; the kernel dropped its watch.
				_ = w.Remove(name)
				delete(watched, name)
				sync()
			}
			if ev.Op.Has(fsnotify.Create) && isWanted(name) && !watched[name] {
				// A source directory appeared: watch it, then look at the files
				// that may have been created in it before the watch existed.
				sync()
				for _, p := range knownFiles(name) {
					if l.invalidate(p) && statFile(p).exists {
						l.emit(p)
					}
				}
			}
		}
	}
}
