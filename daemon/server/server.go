// Package server serves tackled's gRPC API (tackle.v1.TackleService) plus
// the standard health and reflection services on a listener.
//
// It is the only daemon package that imports the generated protobuf code:
// it converts between protobuf messages and domain values (convert.go) and
// maps domain errors to status codes once (errors.go). It owns no state of
// its own beyond the attached streams and the settings problems last
// reported to each session: sessions, the pipeline, pending permission
// requests and the settings belong to the packages it is given. It resolves
// each turn's permission mode (batch override, else the session's own mode,
// else the settings' defaultMode, else default; settings.go). Every RPC is
// refused with PermissionDenied unless the peer's uid (SO_PEERCRED) is the
// allowed one.
package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/tackle-agent/tackle/daemon/config"
	"github.com/tackle-agent/tackle/daemon/dispatch"
	"github.com/tackle-agent/tackle/daemon/permission"
	"github.com/tackle-agent/tackle/daemon/session"
	"github.com/tackle-agent/tackle/daemon/tool"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
	"github.com/tackle-agent/tackle/internal/workers"
)

// ProtocolVersion is the major version of the Attach protocol this daemon speaks.
const ProtocolVersion = 1

// Options configures a Server. Sessions, Dispatcher and Broker are required.
type Options struct {
	// Sessions holds the sessions.
	Sessions *session.Manager
	// Dispatcher runs tool calls; its registry is the tool pool ListTools shows.
	Dispatcher *dispatch.Dispatcher
	// Broker holds pending permission requests.
	Broker *permission.Broker
	// Version and BuildID are reported by Welcome and Status.
	Version, BuildID string
	// PreviousExit is how the previous daemon ended when it did not stop
	// cleanly (Status).
	PreviousExit string
	// Socket is the path reported by Status.
	Socket string
	// AllowedUID is the only peer uid served; 0 or less means the daemon's own uid.
	AllowedUID int
	// ShutdownTimeout bounds each step of the graceful stop (default 10 s).
	ShutdownTimeout time.Duration
	// Logger receives the server's logs (default: none).
	Logger hclog.Logger
	// Settings returns the merged settings of a session's directory and the
	// problems of its settings files (config.Loader.Load). Nil means no
	// settings: a session without a mode of its own runs in default mode.
	Settings func(cwd string) (*config.Settings, []config.Problem)
	// Shells are the sessions' background shells, listed in snapshots and
	// served by ListShells, ReadShellOutput and KillShell. Nil means none.
	Shells Shells
	// Trust is the workspace trust store: snapshots say what an untrusted
	// project's settings lose, and the Trust RPCs change it. Nil means no
	// trust information (the Trust RPCs are unimplemented).
	Trust *config.Trust
	// Permissions explains decisions and lists rules (nil: Explain and
	// ListRules are unimplemented).
	Permissions Permissions
	// SessionLoaded, if set, is called once for every session the server
	// creates or loads first in this run (created reports a new session).
	SessionLoaded func(sess *session.Session, created bool)
	// SessionDeleted, if set, is called after a session was deleted, with
	// the session as it was (its state can be read; appends fail).
	SessionDeleted func(sess *session.Session)
	// AskTimeout, if set, gives the permission timeout of a batch that sets
	// none, from the settings of a session's root (0: the dispatcher's default).
	AskTimeout func(root string) time.Duration
	// MCP, if set, serves the MCP RPCs (else they are Unimplemented).
	MCP MCP
	// SessionTools, if set, gives the tools a session has beyond the
	// dispatcher's registry (its MCP servers' tools), for ListTools.
	SessionTools func(sessionID string) []tool.Tool
	// TrustChanged, if set, is called after Trust or Untrust changed the
	// trusted directories.
	TrustChanged func()
	// EndTurn, if set, is called when a client ends a model turn of a
	// session (turn-scoped grants expire).
	EndTurn func(sessionID string)
	// Deferred, if set, tells which of a session's tools are deferred (the
	// toolSearch setting); nil: the tools' own Deferred attribute.
	Deferred func(sess *session.Session, tools []tool.Tool) map[string]bool
	// Skills, if set, serves the skill RPCs (else they are Unimplemented).
	Skills Skills
	// Agent, if set, serves AgentService (the query loop).
	Agent Agent
	// Subagents serves SubagentService (nil: not served).
	Subagents Subagents
	// Sandbox serves SandboxService (nil: not served).
	Sandbox Sandbox
	// MCPAuth serves McpAuthService and the snapshots' pending flows
	// (nil: not served).
	MCPAuth MCPAuth
	// HookList serves HookService (nil: not served).
	HookList HookLister
}

// flowWindow is the HTTP/2 flow-control window of every stream and
// connection (see New).
const flowWindow = 1 << 20

// turnIdle is how long a turn's goroutine waits for the next turn before
// it ends.
const turnIdle = 5 * time.Second

// Server is tackled's gRPC front. Build it with New, serve with Run.
type Server struct {
	tacklev1.UnimplementedTackleServiceServer

	opts       Options
	log        hclog.Logger
	sessions   *session.Manager
	disp       *dispatch.Dispatcher
	broker     *permission.Broker
	allowedUID uint32
	started    time.Time
	instance   string // random prefix of client ids, unique per daemon run

	grpc   *grpc.Server
	health *health.Server

	// turnCtx is the context of every turn: it outlives the client that
	// submitted the turn and is cancelled only after the dispatcher shut down.
	turnCtx    context.Context
	turnCancel context.CancelFunc

	stopOnce  sync.Once
	stopReq   chan struct{} // closed by the Shutdown RPC
	closing   chan struct{} // closed when attached streams must end
	nextID    atomic.Uint64
	clients   atomic.Int64
	turns     sync.WaitGroup
	turnsMu   sync.Mutex // guards draining and turns.Add
	draining  bool
	closeOnce sync.Once

	// turnWorkers runs the batches' turns on goroutines kept between
	// turns, whose stacks have grown already (see workers).
	turnWorkers *workers.Pool

	settingsMu sync.Mutex        // guards reported; held while a change is reported
	reported   map[string]string // by session id: the settings problems last reported to it

	clientsByID clientRegistry // every client id handed out, with its process

	loadedMu sync.Mutex      // guards loaded
	loaded   map[string]bool // sessions SessionLoaded was called for
}

// New builds a server. It starts no goroutines.
// maxClientMessage is the largest message a client may send: a batch's
// tool inputs, stored as a preview plus a file when they are large.
const maxClientMessage = 64 << 20

func New(opts *Options) (*Server, error) {
	if opts == nil || opts.Sessions == nil || opts.Dispatcher == nil || opts.Broker == nil {
		return nil, errors.New("building server: Sessions, Dispatcher and Broker are required")
	}
	o := *opts
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	uid := o.AllowedUID
	if uid <= 0 {
		uid = os.Getuid()
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	s := &Server{
		opts:       o,
		log:        o.Logger,
		sessions:   o.Sessions,
		disp:       o.Dispatcher,
		broker:     o.Broker,
		allowedUID: uint32(uid),
		started:    time.Now(),
		instance:   hex.EncodeToString(b[:]),
		health:     health.NewServer(),
		stopReq:    make(chan struct{}),
		closing:    make(chan struct{}),
		reported:   map[string]string{},
	}
	s.turnCtx, s.turnCancel = context.WithCancel(context.Background())
	s.turnWorkers = workers.New(turnIdle)
	s.grpc = grpc.NewServer(
		grpc.Creds(peerCreds{}),
		// A client's tool call may carry more than gRPC's default 4 MB (a
		// Write of a large file from tackle call); events stay bounded at
		// about 1 MB on the way out (session.Session.Bounded).
		grpc.MaxRecvMsgSize(maxClientMessage),
		// Fixed flow-control windows, as tackle's clients set them: with
		// gRPC's default (a window sized by bandwidth-delay estimation)
		// each DATA frame received is answered with a PING and a
		// WINDOW_UPDATE. On a unix socket there is no delay to estimate,
		// and the pings were a third of the daemon's reads and writes per
		// small tool call.
		grpc.InitialWindowSize(flowWindow), grpc.InitialConnWindowSize(flowWindow),
		grpc.ChainUnaryInterceptor(s.unaryInterceptor),
		grpc.ChainStreamInterceptor(s.streamInterceptor),
	)
	tacklev1.RegisterTackleServiceServer(s.grpc, s)
	if s.opts.Agent != nil {
		tacklev1.RegisterAgentServiceServer(s.grpc, &agentService{s: s})
	}
	if s.opts.Subagents != nil {
		tacklev1.RegisterSubagentServiceServer(s.grpc, &subagentService{s: s})
	}
	if s.opts.MCPAuth != nil {
		tacklev1.RegisterMcpAuthServiceServer(s.grpc, &mcpAuthService{s: s})
	}
	if s.opts.Sandbox != nil {
		tacklev1.RegisterSandboxServiceServer(s.grpc, &sandboxService{s: s})
	}
	if s.opts.HookList != nil {
		tacklev1.RegisterHookServiceServer(s.grpc, &hookService{s: s})
	}
	tacklev1.RegisterCallServiceServer(s.grpc, &callService{s: s})
	healthpb.RegisterHealthServer(s.grpc, s.health)
	registerReflection(s.grpc, s.log)
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	s.health.SetServingStatus(tacklev1.TackleService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	return s, nil
}

// Run serves on ln until ctx ends or a client calls Shutdown, then stops
// gracefully: no new batches are accepted, the dispatcher cancels in-flight
// calls (their cancelled results are written to the event log), attached
// streams get the last events and end, and the gRPC server stops (forcibly
// after ShutdownTimeout). Run closes ln.
func (s *Server) Run(ctx context.Context, ln net.Listener) error {
	serveErr := make(chan error, 1)
	go func() { serveErr <- s.grpc.Serve(ln) }()

	var err error
	select {
	case <-ctx.Done():
		s.log.Info("stopping: context ended")
	case <-s.stopReq:
		s.log.Info("stopping: shutdown requested")
	case err = <-serveErr:
		s.log.Error("serving ended", "error", err)
	}
	s.stop()
	if err == nil {
		err = <-serveErr
	}
	if errors.Is(err, grpc.ErrServerStopped) {
		err = nil
	}
	return err
}

// RequestStop asks Run to stop gracefully. It does not wait.
func (s *Server) RequestStop() {
	s.stopOnce.Do(func() { close(s.stopReq) })
}

// stop is the graceful stop described at Run.
func (s *Server) stop() {
	s.health.Shutdown()
	s.turnsMu.Lock()
	s.draining = true
	s.turnsMu.Unlock()
	if s.opts.Agent != nil {
		s.opts.Agent.Stop()
	}

	ctx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownTimeout)
	s.disp.Shutdown(ctx)
	cancel()
	s.turnCancel()
	s.turns.Wait()
	s.turnWorkers.Close()

	s.closeOnce.Do(func() { close(s.closing) })
	done := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(done)
	}()
	t := time.NewTimer(s.opts.ShutdownTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.log.Warn("graceful stop timed out: closing the remaining connections")
		s.grpc.Stop()
		<-done
	}
}

// startTurn registers a turn goroutine; false once the server is draining.
func (s *Server) startTurn() bool {
	s.turnsMu.Lock()
	defer s.turnsMu.Unlock()
	if s.draining {
		return false
	}
	s.turns.Add(1)
	return true
}

// newID returns an id unique in this daemon run, with a prefix.
func (s *Server) newID(prefix string) string {
	return prefix + s.instance + "-" + strconv.FormatUint(s.nextID.Add(1), 10)
}
