package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
)

// stateLockFile is the state directory's lock, held by its one daemon.
const stateLockFile = "tackled.lock"

// lockStateDir takes the state directory's lock for the daemon's life. The
// socket's lock does not cover it: two daemons whose sockets differ (the
// runtime directory differs under ssh, cron or su, or --socket does) would
// share state.db, end each other's running calls as left by a crash, and
// write clashing events. The lock file says who holds it. The returned
// file keeps the lock until it is closed or the process ends; another
// daemon holding it is an error that names it.
func lockStateDir(dir, sock string) (*os.File, error) {
	path := filepath.Join(dir, stateLockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the state directory's lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != syscall.EINTR {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		b, _ := io.ReadAll(io.LimitReader(f, 4096))
		f.Close()
		holder := strings.TrimSpace(string(b))
		if holder == "" {
			holder = "another tackled"
		}
		hint := "give this one another --state-dir, or stop the other"
		if _, other, ok := strings.Cut(holder, " on "); ok {
			hint = fmt.Sprintf("use that one (TACKLE_SOCKET=%s), or stop it (TACKLE_SOCKET=%s tackle daemon stop), or give this one another --state-dir", other, other)
		}
		return nil, fmt.Errorf("the state directory %s is in use by %s: one daemon per state directory: %s", dir, holder, hint)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking the state directory: %w", err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(fmt.Sprintf("tackled pid %d on %s\n", os.Getpid(), sock)), 0)
	}
	return f, nil
}

// stateWatchEvery is how often watchStateDir looks.
const stateWatchEvery = 2 * time.Second

// watchStateDir calls gone, once, when the lock file is no longer in the
// state directory (the directory was deleted, as by rm -rf, or the file
// was): the daemon then writes into a deleted database that no one will
// read again, and its record of running processes, which the next daemon
// uses to kill what a crash left, is gone too. Stopping is the way back:
// the next tackle command starts a daemon that makes the directory anew.
// It returns when ctx ends.
func watchStateDir(ctx context.Context, lock *os.File, dir string, log hclog.Logger, gone func()) {
	t := time.NewTicker(stateWatchEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(int(lock.Fd()), &st); err != nil || st.Nlink > 0 {
			continue
		}
		log.Error("the state directory was deleted while tackled ran: stopping (what it stored is gone; the next tackle command starts a daemon that makes the directory anew)", "dir", dir)
		gone()
		return
	}
}
