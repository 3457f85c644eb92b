package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// runMarker is the file a running daemon keeps in its state directory and
// removes when it stops cleanly: one left behind says the daemon before
// did not (it crashed or was killed).
const runMarker = "tackled.run"

type runRecord struct {
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	// LogOffset is where the daemon's log ended when it started: its
	// crash trace, if any, is after it.
	LogOffset int64 `json:"log_offset"`
}

// previousExit reads the marker a previous daemon left and says how it
// ended ("" when it stopped cleanly or never ran): its pid and start, and
// the crash trace's first line from the log if it left one.
func previousExit(stateDir, logPath string) string {
	b, err := os.ReadFile(filepath.Join(stateDir, runMarker))
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	var rec runRecord
	if err != nil || json.Unmarshal(b, &rec) != nil || rec.PID <= 0 {
		return "the previous daemon did not stop cleanly (its run record is unreadable)"
	}
	msg := fmt.Sprintf("the previous daemon (pid %d, started %s) did not stop cleanly", rec.PID, rec.Started.Local().Format(time.DateTime))
	if trace := crashLine(logPath, rec.LogOffset); trace != "" {
		return msg + ": " + trace + " (the trace is in " + logPath + ")"
	}
	return msg + ": it was killed or lost power (no crash trace in " + logPath + ")"
}

// crashLine finds the first line of a Go crash trace (panic:, fatal
// error:, SIGSEGV…) written to the log after off.
func crashLine(logPath string, off int64) string {
	f, err := os.Open(logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return ""
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, p := range []string{"panic: ", "fatal error: ", "SIGSEGV", "SIGABRT", "SIGQUIT", "SIGBUS", "runtime: out of memory"} {
			if strings.HasPrefix(line, p) {
				if len(line) > 300 {
					line = line[:300] + "…"
				}
				return line
			}
		}
	}
	return ""
}

// writeRunMarker records this daemon as running; the returned func removes
// the record (a clean stop).
func writeRunMarker(stateDir string, logFile *os.File) (func(), error) {
	off, _ := logFile.Seek(0, io.SeekEnd)
	b, _ := json.Marshal(runRecord{PID: os.Getpid(), Started: time.Now().UTC(), LogOffset: off})
	path := filepath.Join(stateDir, runMarker)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return func() {}, err
	}
	return func() { _ = os.Remove(path) }, nil
}

// stderrToLog makes the log file the process's stderr (fd 2), so what the
// Go runtime writes there — a crash trace — is kept.
func stderrToLog(logFile *os.File) error {
	return syscall.Dup3(int(logFile.Fd()), 2, 0)
}
