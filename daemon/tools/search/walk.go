package search

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/tackle-agent/tackle/internal/procs"
)

// vcsDirs are never searched or listed, at any depth.
var vcsDirs = map[string]bool{".git": true, ".svn": true, ".hg": true, ".bzr": true, ".jj": true, ".sl": true}

// walkConfig says what a walk visits.
type walkConfig struct {
	root string // absolute, cleaned directory
	// ignoreFiles honours .gitignore, .ignore, .rgignore and .git/info/exclude.
	ignoreFiles bool
	// overrides are Grep's globs: a whitelist match includes a file even if
	// ignored; with any whitelist glob, files that match none are skipped.
	overrides *globSet
	// types keeps only files matching one of these globs (nil: all).
	types *globSet
	// descend, if set, is asked before entering a directory (relative path).
	descend func(rel string) bool
	// want, if set, is asked for each file the rules above keep; only the
	// files it wants are visited (and only those count as skipped when the
	// guard denies them).
	want func(f *walkFile) bool
	// guard skips, and counts, what the session's Read deny rules cover:
	// the root, directories (not descended) and files. Hard links are left
	// to visit, which has the file's status (nil: nothing is denied).
	guard   *guard
	workers int
}

// walkFile is a regular file found by a walk.
type walkFile struct {
	dirfd  int    // open directory holding the file, valid during the callback
	dirAbs string // absolute directory
	dirRel string // directory relative to the root ("" for the root)
	name   string
}

// abs returns the file's absolute path.
func (f *walkFile) abs() string { return joinPath(f.dirAbs, f.name) }

// rel returns the file's path relative to the root.
func (f *walkFile) rel() string {
	if f.dirRel == "" {
		return f.name
	}
	return f.dirRel + "/" + f.name
}

func joinPath(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

type dirJob struct {
	abs, rel string
	node     *ignoreNode
}

// walker walks a tree with a bounded number of workers. Each worker takes a
// directory, queues its subdirectories and handles its files itself.
type walker struct {
	cfg   walkConfig
	visit func(worker int, f *walkFile)

	mu     sync.Mutex // guards the fields below
	cond   *sync.Cond
	stack  []dirJob
	active int
	done   bool

	errors atomic.Int64 // directories that could not be read
}

// walk calls visit for every regular file under cfg.root that the rules
// keep and cfg.guard does not deny, concurrently from cfg.workers
// goroutines (visit gets the worker's index). Symbolic links are never
// followed. It returns the number of directories that could not be read,
// and ctx's error if it ended early.
func walk(ctx context.Context, cfg walkConfig, visit func(worker int, f *walkFile)) (int, error) {
	if cfg.workers <= 0 {
		cfg.workers = defaultWorkers()
	}
	if cfg.guard.deniesPath(cfg.root) {
		return 0, nil
	}
	if cfg.workers > 1 {
		// The process may be running on one P (internal/procs): the
		// walkers want them all.
		defer procs.Wide()()
	}
	w := &walker{cfg: cfg, visit: visit}
	w.cond = sync.NewCond(&w.mu)
	var node *ignoreNode
	if cfg.ignoreFiles {
		node = ancestorNodes(cfg.root)
	}
	w.stack = append(w.stack, dirJob{abs: cfg.root, node: node})
	var wg sync.WaitGroup
	for i := 0; i < cfg.workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.work(ctx, i)
		}()
	}
	wg.Wait()
	return int(w.errors.Load()), ctx.Err()
}

func defaultWorkers() int {
	n := procs.Width()
	if n < 2 {
		n = 2
	}
	if n > 16 {
		n = 16
	}
	return n
}

func (w *walker) work(ctx context.Context, id int) {
	for {
		job, ok := w.pop()
		if !ok {
			return
		}
		if ctx.Err() == nil {
			w.dir(id, job)
		}
		w.finish(ctx.Err() != nil)
	}
}

func (w *walker) pop() (dirJob, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.stack) == 0 && w.active > 0 && !w.done {
		w.cond.Wait()
	}
	if w.done || len(w.stack) == 0 {
		w.done = true
		w.cond.Broadcast()
		return dirJob{}, false
	}
	job := w.stack[len(w.stack)-1]
	w.stack = w.stack[:len(w.stack)-1]
	w.active++
	return job, true
}

func (w *walker) finish(stop bool) {
	w.mu.Lock()
	w.active--
	if stop || (w.active == 0 && len(w.stack) == 0) {
		w.done = true
		w.cond.Broadcast()
	}
	w.mu.Unlock()
}

func (w *walker) push(jobs []dirJob) {
	if len(jobs) == 0 {
		return
	}
	w.mu.Lock()
	w.stack = append(w.stack, jobs...)
	w.mu.Unlock()
	if len(jobs) == 1 {
		w.cond.Signal()
	} else {
		w.cond.Broadcast()
	}
}

// dir reads one directory, queues its subdirectories and visits its files.
func (w *walker) dir(id int, job dirJob) {
	f, err := os.Open(job.abs)
	if err != nil {
		w.errors.Add(1)
		return
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil && len(entries) == 0 {
		w.errors.Add(1)
		return
	}
	node := job.node
	if w.cfg.ignoreFiles {
		var hasRg, hasIg, hasGi, hasGit, gitIsDir bool
		for _, e := range entries {
			switch e.Name() {
			case rgignoreName:
				hasRg = true
			case dotIgnoreName:
				hasIg = true
			case gitignoreName:
				hasGi = true
			case ".git":
				hasGit, gitIsDir = true, e.IsDir()
			}
		}
		if hasRg || hasIg || hasGi || hasGit {
			node = newIgnoreNode(node, job.abs, job.rel, hasRg, hasIg, hasGi, hasGit, gitIsDir)
		}
	}
	var subdirs []dirJob
	var files []string
	for _, e := range entries {
		name := e.Name()
		if vcsDirs[name] {
			continue
		}
		typ := e.Type()
		var isDir bool
		switch {
		case typ.IsDir():
			isDir = true
		case typ.IsRegular():
		default:
			continue // symbolic links, devices, sockets, pipes
		}
		if !w.keep(node, job.rel, name, isDir) {
			continue
		}
		if isDir {
			rel := name
			if job.rel != "" {
				rel = job.rel + "/" + name
			}
			if w.cfg.descend != nil && !w.cfg.descend(rel) {
				continue
			}
			abs := joinPath(job.abs, name)
			if w.cfg.guard.deniesPath(abs) {
				continue
			}
			subdirs = append(subdirs, dirJob{abs: abs, rel: rel, node: node})
		} else {
			files = append(files, name)
		}
	}
	w.push(subdirs)
	if len(files) == 0 {
		return
	}
	wf := walkFile{dirfd: int(f.Fd()), dirAbs: job.abs, dirRel: job.rel}
	for _, name := range files {
		wf.name = name
		if w.cfg.want != nil && !w.cfg.want(&wf) {
			continue
		}
		if w.cfg.guard != nil && w.cfg.guard.deniesPath(wf.abs()) {
			continue
		}
		w.visit(id, &wf)
	}
}

// keep applies overrides, ignore files and types, in ripgrep's order.
func (w *walker) keep(node *ignoreNode, dirRel, name string, isDir bool) bool {
	if o := w.cfg.overrides; o != nil {
		rel := relPath{dirRel: dirRel, name: name}
		switch o.matched(name, &rel, isDir) {
		case ignore:
			return false
		case whitelist:
			return true
		}
		if o.whitelists > 0 && !isDir {
			return false
		}
	}
	if node != nil && node.ignored(dirRel, name, isDir) == ignore {
		return false
	}
	if t := w.cfg.types; t != nil && !isDir {
		if t.matched(name, nil, false) != whitelist {
			return false
		}
	}
	return true
}

// openAt opens name in the directory dirfd for reading, without following
// a symbolic link.
func openAt(dirfd int, name string) (int, error) {
	for {
		fd, err := syscall.Openat(dirfd, name, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
		if err == syscall.EINTR {
			continue
		}
		return fd, err
	}
}

// readAll reads the whole file fd into buf (grown as needed).
func readAll(fd int, buf []byte) ([]byte, error) {
	buf, _, err := readUpTo(fd, buf[:0], -1)
	return buf, err
}

// readUpTo appends the file's content to buf until its end or until buf
// holds limit bytes (limit < 0: no limit), reading no further than limit
// (a buffer that grew for a long line would otherwise take in a chunk of
// its own capacity). eof says which.
func readUpTo(fd int, buf []byte, limit int) (_ []byte, eof bool, err error) {
	for {
		if limit >= 0 && len(buf) >= limit {
			return buf, false, nil
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		end := cap(buf)
		if limit >= 0 {
			end = min(end, limit)
		}
		n, err := syscall.Read(fd, buf[len(buf):end])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return buf, false, err
		}
		if n == 0 {
			return buf, true, nil
		}
		short := n < end-len(buf)
		buf = buf[:len(buf)+n]
		if short {
			// A short read of a regular file means its end: save the
			// read that would return 0.
			return buf, true, nil
		}
	}
}
