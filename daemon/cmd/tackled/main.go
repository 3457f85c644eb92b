// Command tackled is the tackle daemon: it owns the tool pool of an AI
// coding agent and serves it over gRPC on a unix socket.
//
//	tackled [--socket PATH] [--state-dir DIR] [--permission-timeout SECONDS] [--log-level LEVEL]
//
// It logs to STATE_DIR/tackled.log (JSON) and to stderr. STATE_DIR is made
// private to the user (0700, tackle's files in it 0600); one that was open
// to others is tightened, with a warning in the log. SIGTERM and SIGINT
// stop it gracefully (in-flight calls end as cancelled results) with exit
// status 0. A second daemon on the same socket exits with status 1.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tackle-agent/tackle/daemon"
	"github.com/tackle-agent/tackle/daemon/proc"
	"github.com/tackle-agent/tackle/daemon/socket"
	"github.com/tackle-agent/tackle/daemon/store"
	"github.com/tackle-agent/tackle/internal/procs"
)

// Version is the daemon's version, set at link time with
// -ldflags "-X main.Version=...".
var Version = "0.1.0-dev"

func main() {
	if len(os.Args) > 1 && os.Args[1] == proc.KeeperArg {
		// The daemon's keeper: it kills the tool processes left when
		// the daemon dies (see proc.StartKeeper).
		os.Exit(proc.RunKeeper(os.Args[2:]))
	}
	os.Exit(run(os.Args[1:], os.Stderr))
}

// run is main without the exit, returning the exit status.
func run(args []string, stderr io.Writer) int {
	fl := flag.NewFlagSet("tackled", flag.ContinueOnError)
	fl.SetOutput(stderr)
	defSocket := os.Getenv("TACKLE_SOCKET")
	if defSocket == "" {
		defSocket = socket.DefaultPath()
	}
	sockPath := fl.String("socket", defSocket, "unix socket to listen on (env TACKLE_SOCKET)")
	stateDir := fl.String("state-dir", defaultStateDir(), "directory of state.db, outputs/ and tackled.log")
	permTimeout := fl.Int("permission-timeout", int(daemon.DefaultPermissionTimeout/time.Second), "seconds a permission request waits for an answer before it is denied")
	logLevel := fl.String("log-level", "info", "log level: trace, debug, info, warn, error")
	showVersion := fl.Bool("version", false, "print the version and build id, then exit")
	cpuProfile := fl.String("cpuprofile", "", "write a CPU profile to this file until the daemon stops (for measuring)")
	traceFile := fl.String("trace", "", "write an execution trace (go tool trace) to this file until the daemon stops (for measuring)")
	memProfile := fl.String("memprofile", "", "write a heap profile (after a GC) to this file when the daemon stops (for measuring)")
	warmShells := fl.Bool("warm-shells", os.Getenv("TACKLE_WARM_SHELLS") != "0",
		"start a session's next bash ahead of its command (env TACKLE_WARM_SHELLS=0 turns it off)")
	stderrLog := fl.Bool("stderr-to-log", false, "make tackled.log the process's stderr, so a crash trace is kept (clients set it when they start the daemon)")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "tackled: unexpected arguments %q\n", fl.Args())
		return 2
	}
	buildID := BuildID()
	if *showVersion {
		fmt.Fprintf(stderr, "tackled %s (build %s, revision %s)\n", Version, buildID, vcsRevision())
		return 0
	}
	if *stateDir == "" {
		fmt.Fprintln(stderr, "tackled: no state directory: set --state-dir, XDG_STATE_HOME or HOME")
		return 2
	}
	if os.Getenv("GOGC") == "" {
		// Tool calls allocate a lot of short-lived garbage around a small live
		// heap; collecting at 3× rather than 2× the live heap halves the GC's
		// share of a call, and the daemon returns memory when it goes idle.
		debug.SetGCPercent(200)
	}
	if *cpuProfile != "" {
		f, err := os.OpenFile(*cpuProfile, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(stderr, "tackled: starting the CPU profile: %v\n", err)
			return 2
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	if *traceFile != "" {
		f, err := os.OpenFile(*traceFile, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err == nil {
			err = trace.Start(f)
		}
		if err != nil {
			fmt.Fprintf(stderr, "tackled: starting the execution trace: %v\n", err)
			return 2
		}
		defer func() {
			trace.Stop()
			f.Close()
		}()
	}
	if *memProfile != "" {
		defer func() {
			f, err := os.OpenFile(*memProfile, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
			if err != nil {
				fmt.Fprintf(stderr, "tackled: writing the heap profile: %v\n", err)
				return
			}
			defer f.Close()
			runtime.GC()
			if err := pprof.WriteHeapProfile(f); err != nil {
				fmt.Fprintf(stderr, "tackled: writing the heap profile: %v\n", err)
			}
		}()
	}
	// One P while the daemon does one thing at a time, all of them while
	// it does several (internal/procs).
	defer procs.Govern()()
	if *permTimeout <= 0 {
		fmt.Fprintln(stderr, "tackled: --permission-timeout must be a positive number of seconds")
		return 2
	}
	level := hclog.LevelFromString(*logLevel)
	if level == hclog.NoLevel {
		fmt.Fprintf(stderr, "tackled: unknown log level %q: use trace, debug, info, warn or error\n", *logLevel)
		return 2
	}
	sock, err := filepath.Abs(*sockPath)
	if err != nil {
		fmt.Fprintf(stderr, "tackled: resolving socket path: %v\n", err)
		return 2
	}

	// The state directory holds tool outputs: private to the user (0700, its
	// files 0600), tightened before the log is opened in it.
	tightened, err := store.PrepareDir(*stateDir)
	if err != nil {
		fmt.Fprintf(stderr, "tackled: %v\n", err)
		return 1
	}
	logFile, err := os.OpenFile(filepath.Join(*stateDir, "tackled.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintf(stderr, "tackled: opening log file: %v\n", err)
		return 1
	}
	defer logFile.Close()
	log := hclog.NewInterceptLogger(&hclog.LoggerOptions{
		Name:       "tackled",
		Level:      level,
		Output:     logFile,
		JSONFormat: true,
	})
	if *stderrLog {
		if err := stderrToLog(logFile); err != nil {
			log.Warn("cannot make the log the process's stderr: a crash trace would be lost", "error", err)
		}
	} else {
		log.RegisterSink(hclog.NewSinkAdapter(&hclog.LoggerOptions{
			Name:   "tackled",
			Level:  level,
			Output: stderr,
		}))
	}
	for _, c := range tightened {
		c.Log(log)
	}

	ln, err := socket.Listen(sock)
	if errors.Is(err, socket.ErrInUse) {
		if pid := runningPID(sock); pid > 0 {
			fmt.Fprintf(stderr, "tackled is already running on %s (pid %d)\n", sock, pid)
		} else {
			fmt.Fprintf(stderr, "tackled is already running on %s\n", sock)
		}
		return 1
	}
	if err != nil {
		log.Error("cannot listen", "error", err)
		return 1
	}

	lock, err := lockStateDir(*stateDir, sock)
	if err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "tackled: %v\n", err)
		log.Error("not starting", "error", err)
		return 1
	}
	defer lock.Close()

	// Holding the socket and the state directory's lock, this is the one
	// daemon of the state directory: a run record left behind is the
	// previous daemon's, which did not stop cleanly.
	logPath := filepath.Join(*stateDir, "tackled.log")
	prev := previousExit(*stateDir, logPath)
	if prev != "" {
		log.Warn(prev)
	}
	clearRun, err := writeRunMarker(*stateDir, logFile)
	if err != nil {
		log.Warn("cannot record the daemon as running", "error", err)
	}
	// The tool processes a killed daemon left running die now (its
	// "cancelled" results are then true); this daemon's are recorded in
	// their place, and the keeper kills them if this daemon is killed. A
	// clean stop removes the record once they are gone.
	killed, recErr := proc.Recover(filepath.Join(*stateDir, proc.RecordFile))
	for _, k := range killed {
		log.Warn("killed a process the previous daemon left running", "process", k.String())
	}
	if recErr != nil {
		log.Warn("cannot keep the record of running tool processes: those left by a killed daemon may keep running", "error", recErr)
	}
	if err := proc.Init(); err != nil {
		log.Warn("the orphans of tool commands will not be reaped", "error", err)
	}
	if recErr == nil {
		if err := proc.StartKeeper(); err != nil {
			log.Warn("processes that leave a tool command's process group will outlive a killed daemon", "error", err)
		}
	}
	defer proc.StopRecording()

	d, err := daemon.New(&daemon.Options{
		Socket:            sock,
		StateDir:          *stateDir,
		Home:              os.Getenv("HOME"),
		ConfigHome:        os.Getenv("XDG_CONFIG_HOME"),
		PermissionTimeout: time.Duration(*permTimeout) * time.Second,
		Version:           Version,
		BuildID:           buildID,
		Logger:            log,
		PreviousExit:      prev,
		NoWarmShells:      !*warmShells,
	})
	if err != nil {
		ln.Close()
		log.Error("cannot start", "error", err)
		clearRun()
		return 1
	}
	defer clearRun()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		// After the first signal, a second one kills the process at once.
		<-ctx.Done()
		stop()
	}()
	watchCtx, endWatch := context.WithCancel(context.Background())
	defer endWatch()
	go watchStateDir(watchCtx, lock, *stateDir, log, d.Shutdown)
	if err := d.Run(ctx, ln); err != nil {
		log.Error("stopped with an error", "error", err)
		return 1
	}
	return 0
}

// runningPID returns the pid of the daemon answering on path, from the
// socket's peer credentials, or 0.
func runningPID(path string) int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, err := socket.Dial(ctx, path)
	if err != nil {
		return 0
	}
	defer c.Close()
	pid, err := socket.PeerPID(c)
	if err != nil {
		return 0
	}
	return int(pid)
}

// defaultStateDir is $XDG_STATE_HOME/tackle, else ~/.local/state/tackle.
func defaultStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "tackle")
	}
	if h := os.Getenv("HOME"); h != "" {
		return filepath.Join(h, ".local", "state", "tackle")
	}
	return ""
}

// BuildID identifies this build of tackled: the first 12 hex digits of the
// SHA-256 of the executable file, so that a client can compute the id of a
// tackled binary on disk and restart a daemon of another build. If the
// executable cannot be read, it falls back to the VCS revision.
func BuildID() string {
	if exe, err := os.Executable(); err == nil {
		if f, err := os.Open(exe); err == nil {
			defer f.Close()
			h := sha256.New()
			if _, err := io.Copy(h, f); err == nil {
				return hex.EncodeToString(h.Sum(nil))[:12]
			}
		}
	}
	return vcsRevision()
}

// vcsRevision is the VCS revision the binary was built from ("unknown" if
// not recorded), with "+dirty" for a modified tree.
func vcsRevision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "unknown", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "+dirty"
	}
	return rev
}
