package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tackle-agent/tackle/daemon/dispatch"
	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/proc"
	"github.com/tackle-agent/tackle/daemon/sandbox"
	"github.com/tackle-agent/tackle/daemon/sandbox/netproxy"
	"github.com/tackle-agent/tackle/daemon/server"
	"github.com/tackle-agent/tackle/daemon/session"
	"github.com/tackle-agent/tackle/daemon/tool"
)

// This file gives sandboxed commands their network: none but tackle's
// proxy. Each session with sandboxed commands gets one network namespace
// (held by a sleeping process in a user namespace of its own), with only
// a loopback interface; the proxy listens on 127.0.0.1:proxyPort inside
// it (the socket is made from a daemon thread that enters the namespace),
// and every sandboxed command is started from a thread inside it, so
// bubblewrap need not make a network namespace per command (which costs
// more than the rest of the sandbox). The proxy asks the session's
// Decider about every connection: denied domains, loopback and private
// addresses (unless allowLocalBinding), allowed domains, then the
// permission pipeline as a WebFetch(domain:…) call would be decided —
// rules apply, a new domain asks, and "always" saves the domain.

// proxyPort is the proxy's port inside a session's network namespace.
const proxyPort = 3128

// sandboxNet holds the sessions' network namespaces and proxies.
type sandboxNet struct {
	d  *Daemon
	mu sync.Mutex
	ns map[string]*sessionNet // by session id
}

// sessionNet is one session's network namespace and proxy.
type sessionNet struct {
	holder *exec.Cmd
	ns     *os.File // the namespace, /proc/PID/ns/net of the holder
	proxy  *netproxy.Server
	err    error // why it could not be made
}

func newSandboxNet(d *Daemon) *sandboxNet { return &sandboxNet{d: d, ns: map[string]*sessionNet{}} }

// attach sets the policy's way out (the session's namespace, where the
// proxy listens) and returns the variables that point the command's
// programs at the proxy, and how to start the command inside the
// namespace.
func (n *sandboxNet) attach(sess *session.Session, p *sandbox.Policy, s *sandbox.Settings) ([]string, func(func() error) error, error) {
	sn := n.session(sess)
	if sn.err != nil {
		return nil, nil, fmt.Errorf("the sandbox's network namespace: %w", sn.err)
	}
	p.SharedNet = true
	return netproxy.Env(proxyPort, proxyPort, false), sn.enter, nil
}

// session returns the session's namespace, making it on first use.
func (n *sandboxNet) session(sess *session.Session) *sessionNet {
	n.mu.Lock()
	defer n.mu.Unlock()
	if sn := n.ns[sess.ID()]; sn != nil && sn.err == nil {
		return sn
	}
	sn := &sessionNet{}
	sn.err = sn.start(n.d, sess)
	if sn.err != nil {
		n.d.log.Warn("the sandbox's network namespace could not be made", "session", sess.ID(), "error", sn.err)
		sn.stop()
	}
	n.ns[sess.ID()] = sn
	return sn
}

// start makes the namespace, brings its loopback up and starts the proxy
// inside it.
func (sn *sessionNet) start(d *Daemon, sess *session.Session) error {
	uid, gid := os.Getuid(), os.Getgid()
	sn.holder = exec.Command("/bin/sleep", "infinity")
	sn.holder.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}},
		Setpgid:     true,
	}
	// Through proc, as every child of the daemon: Pdeathsig from a thread
	// that never exits, and recorded, so the holder dies with the daemon.
	h, err := proc.Start(sn.holder, "sandbox network holder", nil)
	if err != nil {
		sn.holder = nil
		return fmt.Errorf("starting the namespace's holder: %w", err)
	}
	go func() {
		_ = sn.holder.Wait() // it only ends when killed
		h.Release()
	}()
	f, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", sn.holder.Process.Pid))
	if err != nil {
		return err
	}
	sn.ns = f
	var ln net.Listener
	err = sn.enter(func() error {
		if err := loopbackUp(); err != nil {
			return fmt.Errorf("bringing up the loopback interface: %w", err)
		}
		var err error
		ln, err = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(proxyPort))
		return err
	})
	if err != nil {
		return err
	}
	sn.proxy, err = netproxy.New(netproxy.Options{
		Decide: func(ctx context.Context, host string, port int) netproxy.Verdict {
			return d.sandbox.decideNet(ctx, sess, host, port)
		},
		Dial:   d.opts.SandboxDial,
		Logger: d.log.Named("netproxy"),
		OnBlocked: func(host string, port int, reason string) {
			if _, err := sess.Append(&event.Event{Type: event.Notice, Text: fmt.Sprintf("sandbox: blocked a connection to %s:%d (%s)", host, port, reason)}); err != nil {
				d.log.Debug("recording a blocked connection", "error", err)
			}
		},
	})
	if err != nil {
		ln.Close()
		return err
	}
	go sn.proxy.Serve(ln) //nolint:errcheck // it ends with Close
	return nil
}

// enter runs f on a thread inside the namespace (the sockets it makes and
// the processes it starts belong to it), then moves the thread back. It
// does so on a goroutine of its own: a thread that cannot be moved back
// stays locked to that goroutine and ends with it, where the caller's
// goroutine may be one the daemon keeps for later calls (workers).
func (sn *sessionNet) enter(f func() error) error {
	errc := make(chan error, 1)
	go func() { errc <- sn.enterHere(f) }()
	return <-errc
}

// enterHere is enter on the calling goroutine, which must end after it.
func (sn *sessionNet) enterHere(f func() error) error {
	runtime.LockOSThread()
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer orig.Close()
	if err := unix.Setns(int(sn.ns.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("entering the sandbox's network namespace: %w", err)
	}
	ferr := f()
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err == nil {
		runtime.UnlockOSThread()
	} // else the thread stays locked and ends with its goroutine, never reused
	return ferr
}

// stop ends the proxy and the namespace.
func (sn *sessionNet) stop() {
	if sn.proxy != nil {
		sn.proxy.Close()
	}
	if sn.ns != nil {
		sn.ns.Close()
	}
	if sn.holder != nil && sn.holder.Process != nil {
		sn.holder.Process.Kill()
	}
}

// close ends every session's namespace (the daemon stops).
func (n *sandboxNet) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for id, sn := range n.ns {
		sn.stop()
		delete(n.ns, id)
	}
}

// loopbackUp sets the loopback interface of the current thread's network
// namespace up.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// status fills in the network part of a status.
func (n *sandboxNet) status(sess *session.Session, out *server.SandboxStatus) {
	if !out.Enabled {
		return
	}
	out.Network = fmt.Sprintf("proxy: 127.0.0.1:%d inside the session's network namespace (HTTP, HTTPS CONNECT, SOCKS5)", proxyPort)
}

// decideNet decides a sandboxed command's connection.
func (l *sandboxLayer) decideNet(ctx context.Context, sess *session.Session, host string, port int) netproxy.Verdict {
	st, _ := l.d.loader.Load(sess.Root())
	s, _ := sandbox.Read(st)
	for _, p := range s.DeniedDomains {
		if netproxy.MatchDomain(p, host) {
			return netproxy.Verdict{Reason: "denied by sandbox.network.deniedDomains " + p}
		}
	}
	if local := host == "localhost" || strings.HasSuffix(host, ".localhost"); local || isLocalIP(host) {
		if !s.AllowLocalBinding {
			return netproxy.Verdict{Reason: "a local or private address (set sandbox.network.allowLocalBinding to reach the host's local servers)"}
		}
		return netproxy.Verdict{Allow: true, Reason: "a local address, allowed by sandbox.network.allowLocalBinding"}
	}
	for _, p := range s.AllowedDomains {
		if netproxy.MatchDomain(p, host) {
			return netproxy.Verdict{Allow: true, Reason: "allowed by sandbox.network.allowedDomains " + p}
		}
	}
	// The permission pipeline decides as for WebFetch of that domain:
	// WebFetch(domain:…) rules, hooks, and a person for a new one.
	in, _ := json.Marshal(map[string]any{"host": host, "port": port})
	rs := l.d.disp.RunTurn(ctx, sess, dispatch.Turn{
		ClientID: "sandbox", Calls: []event.CallInfo{{ID: sandboxNetCallPrefix + strconv.Itoa(port) + "-" + host, Name: sandboxNetTool, Input: in}},
		ResolvePermissionTimeout: func() time.Duration { return l.d.askTimeout(sess.Root()) },
	})
	if len(rs) == 1 && rs[0] != nil && rs[0].Status == event.StatusCompleted {
		return netproxy.Verdict{Allow: true, Reason: "allowed by the permission stage"}
	}
	why := "not allowed"
	if len(rs) == 1 && rs[0] != nil {
		why = rs[0].Status
	}
	return netproxy.Verdict{Reason: "the connection was " + why + " (allow it with sandbox.network.allowedDomains or a WebFetch(domain:" + host + ") rule)"}
}

// isLocalIP reports whether host is a loopback, private, link-local or
// unspecified address.
func isLocalIP(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsUnspecified())
}

// sandboxNetTool is the internal tool a sandboxed connection is decided
// as: canonically WebFetch, so WebFetch(domain:…) rules and "always"
// answers apply; the model never gets it (it is not in the registry, and
// it refuses calls that are not the proxy's).
const (
	sandboxNetTool       = "SandboxNetwork"
	sandboxNetCallPrefix = "sandbox-net-"
)

// sandboxNetCall is that tool.
type sandboxNetCall struct{}

func (sandboxNetCall) Spec() tool.Spec {
	return tool.Spec{Name: "WebFetch", InputSchema: json.RawMessage(`{"type":"object","properties":{"host":{"type":"string"},"port":{"type":"integer"}},"required":["host","port"]}`)}
}

func (sandboxNetCall) Attributes(json.RawMessage) tool.Attributes {
	return tool.Attributes{Origin: tool.OriginBuiltin, ConcurrencySafe: true}
}

func (sandboxNetCall) Validate(_ context.Context, call *tool.Call) error {
	if len(call.ID) < len(sandboxNetCallPrefix) || call.ID[:len(sandboxNetCallPrefix)] != sandboxNetCallPrefix {
		return errors.New("Error: No such tool available: " + sandboxNetTool)
	}
	return nil
}

func (sandboxNetCall) CheckPermission(_ context.Context, call *tool.Call) (tool.Access, error) {
	var in struct {
		Host string `json:"host"`
		Port int    `json:"port"`
	}
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return tool.Access{}, err
	}
	return tool.Access{Kind: tool.AccessNetwork, Command: in.Host, Domain: in.Host,
		Reason: fmt.Sprintf("a sandboxed command wants to connect to %s:%d", in.Host, in.Port)}, nil
}

func (sandboxNetCall) Run(context.Context, *tool.Call, tool.Progress) (*tool.Result, error) {
	return tool.TextResult("allowed"), nil
}
