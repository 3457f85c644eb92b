// Package daemon assembles tackled: the state database, the sessions, the
// settings loader, the tool pool, the pipeline, the permission broker and
// the gRPC server. New builds everything and starts nothing; Run serves on
// a listener until its context ends or a client asks for a shutdown, then
// stops gracefully and closes the state.
//
// It holds no logic of its own beyond wiring and the shutdown order; the
// binary in daemon/cmd/tackled adds flags, logging and signals.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tackle-agent/tackle/daemon/config"
	"github.com/tackle-agent/tackle/daemon/dispatch"
	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/hook"
	"github.com/tackle-agent/tackle/daemon/permission"
	"github.com/tackle-agent/tackle/daemon/server"
	"github.com/tackle-agent/tackle/daemon/session"
	"github.com/tackle-agent/tackle/daemon/store"
	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/daemon/tools/ask"
	"github.com/tackle-agent/tackle/daemon/tools/fs"
	"github.com/tackle-agent/tackle/daemon/tools/notebook"
	"github.com/tackle-agent/tackle/daemon/tools/search"
	"github.com/tackle-agent/tackle/daemon/tools/shell"
	"github.com/tackle-agent/tackle/daemon/tools/todo"
	"github.com/tackle-agent/tackle/daemon/tools/web"
	"github.com/tackle-agent/tackle/internal/exetrim"
)

// DefaultPermissionTimeout is how long a permission request waits for an
// answer before it is denied.
const DefaultPermissionTimeout = 120 * time.Second

// Options configures a daemon. A nil *Options is not allowed: StateDir is required.
type Options struct {
	// Socket is the socket path reported by Status (Run serves on whatever listener it gets).
	Socket string
	// StateDir holds state.db and outputs/ (required; tackled uses $XDG_STATE_HOME/tackle).
	StateDir string
	// ConfigHome is $XDG_CONFIG_HOME for the settings sources (default: Home/.config).
	ConfigHome string
	// Home is the user's home directory for the settings sources (default: $HOME).
	Home string
	// ManagedSettings is the managed settings file (default: the config package's).
	ManagedSettings string
	// ManagedSkills is the directory of managed skills (default
	// /etc/tackle/skills; "-" for none).
	ManagedSkills string
	// PermissionTimeout is how long a permission request waits (default 120 s).
	PermissionTimeout time.Duration
	// Version and BuildID are reported to clients.
	Version, BuildID string
	// PreviousExit says how the daemon before this one ended, when it did
	// not stop cleanly (reported by Status).
	PreviousExit string
	// Logger receives the daemon's logs (default: none).
	Logger hclog.Logger
	// AllowedUID is the only peer uid served; 0 or -1 means the daemon's own uid.
	AllowedUID int
	// ShutdownTimeout bounds each step of the graceful stop (default 10 s).
	ShutdownTimeout time.Duration
	// Bwrap is bubblewrap's path for the Bash sandbox (default: bwrap in
	// $PATH); SandboxBridge the bridge helper run inside a sandbox in
	// front of the command (default: tackle-sandbox-bridge next to this
	// executable, then in $PATH).
	Bwrap, SandboxBridge string
	// SandboxExec is the helper that starts sandboxed commands inside a
	// sandbox made once per session and policy (default:
	// tackle-sandbox-exec next to this executable, then in $PATH; without
	// it each command gets a bubblewrap of its own).
	SandboxExec string
	// SandboxIdle is how long a session's sandbox that no command uses is
	// kept before it ends (default 10 minutes; the next command makes it
	// again, in tens of milliseconds).
	SandboxIdle time.Duration
	// SandboxDial, if set, opens the sandbox proxy's connections (tests
	// map names to loopback servers); default a net.Dialer.
	SandboxDial func(ctx context.Context, network, addr string) (net.Conn, error)
	// NoWarmShells starts each Bash command's shell when the command
	// comes, never ahead of it (see shell.Options.NoWarmShell).
	NoWarmShells bool
}

// Daemon is a built tackled. Build it with New, serve with Run (once).
type Daemon struct {
	opts     Options
	log      hclog.Logger
	store    *store.Store
	sessions *session.Manager
	loader   *config.Loader
	registry *tool.Registry
	disp     *dispatch.Dispatcher
	broker   *permission.Broker
	policy   permission.Policy
	trust    *config.Trust
	perms    *perms
	hooks    *hook.Hooks
	shells   *shell.Shells
	mcp      *mcpLayer
	deferral *deferral
	skills   *skillLayer
	prompts  *prompts
	agents   *subagents
	sandbox  *sandboxLayer
	srv      *server.Server

	// bg counts the hook runs started in the background (SessionStart,
	// SessionEnd, CwdChanged, ConfigChange); Run waits for them.
	bg    sync.WaitGroup
	bgCtx context.Context
	bgEnd context.CancelFunc

	closeOnce sync.Once
	closeErr  error
}

// New builds a daemon: it opens the state database and builds every part,
// but starts no goroutine and listens on nothing.
func New(opts *Options) (*Daemon, error) {
	if opts == nil || opts.StateDir == "" {
		return nil, errors.New("building daemon: a state directory is required")
	}
	o := *opts
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.PermissionTimeout <= 0 {
		o.PermissionTimeout = DefaultPermissionTimeout
	}
	if o.Home == "" {
		o.Home, _ = os.UserHomeDir()
	}
	if o.ConfigHome == "" && o.Home != "" {
		o.ConfigHome = filepath.Join(o.Home, ".config")
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	switch o.ManagedSkills {
	case "":
		o.ManagedSkills = managedSkillsDir(DefaultManagedSkills)
	case "-":
		o.ManagedSkills = ""
	}
	changes, err := store.PrepareDir(o.StateDir) // 0700, tightened if it was open to others
	if err != nil {
		return nil, err
	}
	for _, c := range changes {
		c.Log(o.Logger)
	}
	d := &Daemon{opts: o, log: o.Logger}
	d.bgCtx, d.bgEnd = context.WithCancel(context.Background())

	st, err := store.OpenWith(filepath.Join(o.StateDir, "state.db"), &store.Options{Logger: o.Logger.Named("store")})
	if err != nil {
		return nil, fmt.Errorf("opening state: %w", err)
	}
	d.store = st
	d.trust = config.NewTrust(o.ConfigHome)
	d.loader = config.NewLoader(&config.Options{
		Home:        o.Home,
		ConfigHome:  o.ConfigHome,
		ManagedPath: o.ManagedSettings,
		Logger:      o.Logger.Named("config"),
		Trust:       d.trust,
	})
	d.sessions = session.NewManager(st, &session.Options{
		StateDir: o.StateDir, Logger: o.Logger.Named("session"), OnCwdChange: d.cwdChanged,
		OnFileRecorded: func(s *session.Session, path string) {
			if d.skills != nil {
				d.skills.touched(s, path)
			}
		},
		// A session's settings add working directories
		// (permissions.additionalDirectories) and environment variables (env).
		Settings: d.loader.Load,
		Home:     o.Home,
	})
	// A daemon that was killed left turns that never ended: end them now,
	// before any client can see the sessions.
	if n, err := d.sessions.Recover(context.Background()); err != nil {
		d.log.Error("ending the turns a previous daemon left unfinished", "error", err)
	} else if n > 0 {
		d.log.Warn("ended turns a previous daemon left unfinished (it was killed)", "turns", n)
	}
	d.registry = tool.NewRegistry()
	if err := d.registry.Register(fs.Tools(nil)...); err != nil {
		d.closeState()
		return nil, fmt.Errorf("registering file tools: %w", err)
	}
	if err := d.registry.Register(search.Tools(nil)...); err != nil {
		d.closeState()
		return nil, fmt.Errorf("registering search tools: %w", err)
	}
	d.agents = newSubagents(d)
	d.sandbox = newSandboxLayer(d)
	d.shells = shell.New(&shell.Options{OnChange: d.shellChanged, Logger: o.Logger.Named("shell"), Tasks: d.agents, Sandbox: d.sandbox,
		// A warm shell keeps its sandbox busy: it ends first, so that an
		// unused sandbox still ends after SandboxIdle.
		WarmShellIdle: min(warmShellIdle, d.sandbox.exec.idle/2), NoWarmShell: o.NoWarmShells})
	if err := d.registry.Register(d.shells.Tools()...); err != nil {
		d.closeState()
		return nil, fmt.Errorf("registering shell tools: %w", err)
	}
	if err := d.registry.Register(web.Tools(&web.Options{Settings: d.loader.Load, Logger: o.Logger.Named("web"),
		Ask: func(ctx context.Context, env tool.Env, system, prompt string) (string, error) {
			return d.ask(ctx, env, "", system, prompt)
		}})...); err != nil {
		d.closeState()
		return nil, fmt.Errorf("registering web tools: %w", err)
	}
	if err := d.registry.Register(ask.Tools()...); err != nil {
		d.closeState()
		return nil, fmt.Errorf("registering AskUserQuestion: %w", err)
	}
	if err := d.registry.Register(todo.Tools()...); err != nil {
		d.closeState()
		return nil, fmt.Errorf("registering todo tools: %w", err)
	}
	if err := d.registry.Register(notebook.Tools(nil)...); err != nil {
		d.closeState()
		return nil, fmt.Errorf("registering notebook tools: %w", err)
	}
	d.mcp = newMCPLayer(d, filepath.Join(o.StateDir, "mcp-logs"), filepath.Join(o.StateDir, "mcp-oauth"))
	if err := d.registry.Register(d.mcp.mgr.ResourceTools()...); err != nil {
		d.closeState()
		return nil, fmt.Errorf("registering MCP resource tools: %w", err)
	}
	d.skills = newSkillLayer(d)
	d.prompts = newPrompts(d)
	if err := d.registry.Register(d.skills.tool()); err != nil {
		d.closeState()
		return nil, fmt.Errorf("registering Skill: %w", err)
	}
	if err := d.registry.Register(&agentTool{l: d.agents}); err != nil {
		d.closeState()
		return nil, fmt.Errorf("registering Agent: %w", err)
	}
	d.deferral = newDeferral(d)
	if err := d.registry.Register(d.deferral.searchTool()); err != nil {
		d.closeState()
		return nil, fmt.Errorf("registering ToolSearch: %w", err)
	}
	d.broker = permission.NewBroker()
	d.policy = permission.NewEngine()
	d.perms = newPerms(d)
	d.hooks = hook.New(&hook.Options{
		Settings: d.loader.Load,
		Trusted:  d.trust.Trusted,
		Logger:   o.Logger.Named("hook"),
		Ask:      d.ask,
	})
	d.disp = dispatch.New(d.registry, d.policy, d.broker, d.hooks, d.dispatchOptions())
	d.srv, err = server.New(&server.Options{
		Sessions:        d.sessions,
		Dispatcher:      d.disp,
		Broker:          d.broker,
		Version:         o.Version,
		BuildID:         o.BuildID,
		PreviousExit:    o.PreviousExit,
		Socket:          o.Socket,
		AllowedUID:      o.AllowedUID,
		ShutdownTimeout: o.ShutdownTimeout,
		Logger:          o.Logger.Named("server"),
		Settings:        d.loader.Load,
		Shells:          d.shells,
		Trust:           d.trust,
		Permissions:     d.perms,
		SessionLoaded:   d.sessionLoaded,
		SessionDeleted:  d.sessionDeleted,
		AskTimeout:      d.askTimeout,
		MCP:             d.mcp,
		MCPAuth:         d.mcp,
		SessionTools:    d.mcp.tools,
		TrustChanged:    d.trustChanged,
		EndTurn:         d.perms.endTurn,
		Deferred:        d.deferral.deferred,
		Skills:          d.skills,
		Agent:           d.prompts,
		Subagents:       d.agents,
		Sandbox:         d.sandbox,
		HookList:        hookList{d},
	})
	if err != nil {
		d.closeState()
		return nil, err
	}
	return d, nil
}

// trustChanged applies a trust decision at once: what the project's
// settings add to its sessions (directories, env), its hooks (their parsed
// configuration is otherwise re-read within a second) and its MCP servers.
func (d *Daemon) trustChanged() {
	d.sessions.SettingsChanged()
	d.hooks.Invalidate()
	d.mcp.resync()
}

// Run serves on ln until ctx ends or a client calls Shutdown. It then stops
// gracefully — in-flight calls end as cancelled results written to the
// event log, attached streams end, the gRPC server stops — and closes the
// sessions and the state database. Run closes ln. It returns nil after a
// requested stop.
func (d *Daemon) Run(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := d.loader.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			d.log.Warn("settings watcher ended", "error", err)
		}
	}()

	wg.Add(1)
	go func() {
		defer wg.Done()
		d.watchSettings(ctx)
	}()

	wg.Add(1)
	go func() {
		defer wg.Done()
		d.trimWhenIdle(ctx)
	}()

	d.log.Info("serving", "socket", d.opts.Socket, "version", d.opts.Version, "build_id", d.opts.BuildID, "pid", os.Getpid())
	err := d.srv.Run(ctx, ln)
	cancel()
	wg.Wait()
	d.bgEnd()
	d.bg.Wait()
	if cerr := d.closeState(); err == nil {
		err = cerr
	}
	d.log.Info("stopped")
	return err
}

// watchSettings logs every settings file that changes and has the server
// re-check the settings of the loaded sessions, so a file that stops (or
// starts again) parsing is reported to them at once. It returns when ctx
// ends or the loader stops watching.
func (d *Daemon) watchSettings(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case path, ok := <-d.loader.Changes():
			if !ok {
				return
			}
			// The sessions first: a client that sees the change logged or
			// reported finds them up to date.
			d.sessions.SettingsChanged()
			d.log.Info("settings changed", "path", path)
			d.srv.CheckSettings()
			d.configChanged(path)
		}
	}
}

// shellChanged appends a shell_updated event to the shell's session, so
// every attached client hears that a background shell started, exited or
// was killed. A session that is gone (deleted) gets nothing.
func (d *Daemon) shellChanged(sessionID string, info event.ShellInfo) {
	sess, err := d.sessions.Get(context.Background(), sessionID)
	if err != nil {
		d.log.Debug("background shell of a session that is gone", "session", sessionID, "shell", info.ID, "status", info.Status, "error", err)
		return
	}
	if _, err := sess.Append(&event.Event{Type: event.ShellUpdated, Shell: &info}); err != nil {
		d.log.Warn("recording a background shell's change", "session", sessionID, "shell", info.ID, "status", info.Status, "error", err)
	}
}

// Shutdown asks Run to stop gracefully, as the Shutdown RPC does. It does not wait.
func (d *Daemon) Shutdown() { d.srv.RequestStop() }

// closeState closes the sessions and the database, once.
func (d *Daemon) closeState() error {
	d.closeOnce.Do(func() {
		var errs []error
		// The shells go first, while their sessions can still record
		// that they were killed; Run calls this after the dispatcher shut down.
		if d.shells != nil {
			d.shells.Close()
		}
		if d.mcp != nil {
			d.mcp.mgr.Close()
			d.mcp.auth.Close()
		}
		if d.sandbox != nil {
			d.sandbox.exec.close()
			d.sandbox.net.close()
		}
		if d.sessions != nil {
			if err := d.sessions.Close(); err != nil {
				errs = append(errs, fmt.Errorf("closing sessions: %w", err))
			}
		}
		if d.store != nil {
			if err := d.store.Close(); err != nil {
				errs = append(errs, fmt.Errorf("closing state database: %w", err))
			}
		}
		d.closeErr = errors.Join(errs...)
	})
	return d.closeErr
}

// Close releases what New opened, for a daemon that is never Run.
func (d *Daemon) Close() error {
	d.bgEnd()
	d.bg.Wait()
	return d.closeState()
}

// idleTrimPeriod is how often the daemon checks whether it has gone idle.
const idleTrimPeriod = 5 * time.Second

// trimWhenIdle returns the memory of finished work to the system once the
// daemon has been idle for a check period after some activity, and once
// after start-up (what starting allocated and dropped): a daemon that lives
// for days should sit at its idle size between bursts of tool calls, not at
// the peak of the last burst. It returns when ctx ends.
func (d *Daemon) trimWhenIdle(ctx context.Context) {
	t := time.NewTicker(idleTrimPeriod)
	defer t.Stop()
	trimmedAt := ^uint64(0) // no count yet: the first idle period trims
	var lastEnded uint64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		running, ended := d.disp.Activity()
		// Trim once the count has stood still for a whole period.
		if running == 0 && ended == lastEnded && ended != trimmedAt {
			// The heap's free pages, and the pages of the binary only
			// earlier work touched (start-up ran every package's
			// init): a call maps back what it runs, from the page cache.
			dropped, err := exetrim.Trim()
			if err != nil {
				d.log.Warn("idle: could not unmap the executable's pages", "error", err)
			}
			trimmedAt = ended
			d.log.Debug("idle: returned memory to the system", "turns", ended, "executable_kb", dropped>>10)
		}
		lastEnded = ended
	}
}
