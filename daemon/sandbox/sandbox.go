// Package sandbox confines Bash commands at the OS level. bubblewrap makes
// a sandbox (mount, user and PID namespaces in the session's network
// namespace) once per session and policy, and a server inside it starts
// each command (package sandboxexec; without the server, each command gets
// a bubblewrap of its own). There the whole filesystem is read-only but
// for the session's working directories, its temporary directory and the
// configured extra paths; protected paths and denied reads stay out of
// reach there too; and the network is gone but for tackle's per-session
// proxy (package netproxy).
//
// Why bubblewrap, not Landlock: Landlock only adds allowed hierarchies, so
// it cannot keep a protected .git/hooks or a denied .env unwritable or
// unreadable inside a writable working directory; bind mounts can. The
// cost is measured in the integration benchmarks (see the README).
//
// The package reads Claude Code's sandbox settings, builds a Policy for
// one command, and turns it into bwrap's command line (for the command or
// for the server). It runs nothing but the availability probe.
package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tackle-agent/tackle/daemon/config"
	"github.com/tackle-agent/tackle/daemon/sandbox/sandboxexec"
)

// Settings are Claude Code's "sandbox" settings, merged over the layers
// (lowest precedence first: a scalar from the highest layer that sets it,
// lists joined). An untrusted project's layer holds only what narrows
// (the config package drops the rest).
type Settings struct {
	Enabled bool
	// AutoAllow (autoAllowBashIfSandboxed, default true): a sandboxed
	// command no deny or ask rule matches runs without a prompt.
	AutoAllow bool
	// AllowUnsandboxed (allowUnsandboxedCommands, default true): the Bash
	// input's dangerouslyDisableSandbox runs the command outside, through
	// the normal permission flow (it then always asks).
	AllowUnsandboxed bool
	// FailIfUnavailable refuses Bash when the sandbox cannot run here;
	// otherwise a notice says so and the normal permission flow applies.
	FailIfUnavailable bool
	// Excluded (excludedCommands) run outside the sandbox, through the
	// normal permission flow: command prefixes ("docker", "git push").
	Excluded []string

	AllowedDomains, DeniedDomains []string
	// AllowUnixSockets are socket paths a sandboxed command may connect
	// to (bound into the sandbox); AllowAllUnixSockets does not confine
	// them (on Linux, sockets on the read-only filesystem are reachable
	// anyway; see README).
	AllowUnixSockets    []string
	AllowAllUnixSockets bool
	// AllowLocalBinding lets a command reach the host's local servers
	// (loopback and private addresses) through the proxy.
	AllowLocalBinding bool

	AllowWrite, DenyWrite, DenyRead, AllowRead []string
	// HiddenEnv (credentials.envVars) are removed from a sandboxed
	// command's environment.
	HiddenEnv []string
}

// rawSettings is the JSON shape of one layer's "sandbox" block.
type rawSettings struct {
	Enabled                  *bool    `json:"enabled"`
	AutoAllowBashIfSandboxed *bool    `json:"autoAllowBashIfSandboxed"`
	AllowUnsandboxedCommands *bool    `json:"allowUnsandboxedCommands"`
	FailIfUnavailable        *bool    `json:"failIfUnavailable"`
	ExcludedCommands         []string `json:"excludedCommands"`
	Network                  struct {
		AllowedDomains      []string `json:"allowedDomains"`
		DeniedDomains       []string `json:"deniedDomains"`
		AllowUnixSockets    []string `json:"allowUnixSockets"`
		AllowAllUnixSockets *bool    `json:"allowAllUnixSockets"`
		AllowLocalBinding   *bool    `json:"allowLocalBinding"`
	} `json:"network"`
	Filesystem struct {
		AllowWrite []string `json:"allowWrite"`
		DenyWrite  []string `json:"denyWrite"`
		DenyRead   []string `json:"denyRead"`
		AllowRead  []string `json:"allowRead"`
	} `json:"filesystem"`
	Credentials struct {
		EnvVars []string `json:"envVars"`
	} `json:"credentials"`
}

// Read merges the sandbox settings of st's layers. A layer whose block
// does not parse is reported and skipped (what it would confine is then
// not confined: Enabled from other layers still holds).
func Read(st *config.Settings) (Settings, []string) {
	s := Settings{AutoAllow: true, AllowUnsandboxed: true}
	if st == nil {
		return s, nil
	}
	var problems []string
	set := func(dst *bool, src *bool) {
		if src != nil {
			*dst = *src
		}
	}
	join := func(dst *[]string, src []string) {
		for _, v := range src {
			if v = strings.TrimSpace(v); v != "" && !slices.Contains(*dst, v) {
				*dst = append(*dst, v)
			}
		}
	}
	for _, l := range st.Layers {
		raw, ok := l.Raw["sandbox"]
		if !ok {
			continue
		}
		var r rawSettings
		if err := json.Unmarshal(raw, &r); err != nil {
			problems = append(problems, fmt.Sprintf("%s: sandbox: %v", l.Source.Path, err))
			continue
		}
		set(&s.Enabled, r.Enabled)
		set(&s.AutoAllow, r.AutoAllowBashIfSandboxed)
		set(&s.AllowUnsandboxed, r.AllowUnsandboxedCommands)
		set(&s.FailIfUnavailable, r.FailIfUnavailable)
		set(&s.AllowAllUnixSockets, r.Network.AllowAllUnixSockets)
		set(&s.AllowLocalBinding, r.Network.AllowLocalBinding)
		join(&s.Excluded, r.ExcludedCommands)
		join(&s.AllowedDomains, r.Network.AllowedDomains)
		join(&s.DeniedDomains, r.Network.DeniedDomains)
		join(&s.AllowUnixSockets, r.Network.AllowUnixSockets)
		join(&s.AllowWrite, r.Filesystem.AllowWrite)
		join(&s.DenyWrite, r.Filesystem.DenyWrite)
		join(&s.DenyRead, r.Filesystem.DenyRead)
		join(&s.AllowRead, r.Filesystem.AllowRead)
		join(&s.HiddenEnv, r.Credentials.EnvVars)
	}
	return s, problems
}

// ExcludedCommand reports whether the command line starts with one of the
// excluded commands (a word-boundary prefix: "git" excludes "git push",
// not "gitk").
func (s *Settings) ExcludedCommand(commands []string) bool {
	for _, c := range commands {
		c = strings.TrimSpace(c)
		for _, e := range s.Excluded {
			if c == e || strings.HasPrefix(c, e+" ") {
				return true
			}
		}
	}
	return false
}

// Protected are the entries of a writable directory that stay read-only
// inside the sandbox: what runs code or changes tackle's own settings
// later (hooks, configuration, MCP servers, shell start-up files).
var Protected = []string{
	".git/hooks", ".git/config", ".tackle", ".claude", ".vscode",
	".mcp.json", ".gitmodules", ".bashrc", ".zshrc", ".profile", ".bash_profile", ".zprofile", ".gitconfig",
}

// protectedDirs are the Protected entries that are directories: created
// empty when missing, so the sandbox can hold them read-only (a missing
// file cannot be held without creating it; see README).
var protectedDirs = map[string]bool{".git/hooks": true, ".tackle": true, ".claude": true}

// Policy is what one sandboxed command may do.
type Policy struct {
	// Write are the writable directories (absolute): the working
	// directories, the session's temporary directory, allowWrite.
	Write []string
	// ReadOnly are paths inside Write held read-only (protected entries,
	// denyWrite).
	ReadOnly []string
	// HideFiles and HideDirs are denied reads: a file reads as an empty
	// unreadable one, a directory as empty.
	HideFiles, HideDirs []string
	// Binds are extra paths bound read-write (allowed unix sockets, the
	// proxy's sockets).
	Binds []string
	// Mask are directories replaced by an empty one before anything is
	// bound (Options.Mask).
	Mask []string
	// Network, if set, is the way out: a bridge inside the namespace to
	// the session's proxy. Unset, the command has no network at all.
	Network *Network
	// Seccomp: the command cannot create unix sockets (seccomp.go); the
	// caller passes SeccompProgram on descriptor 3.
	Seccomp bool
	// SharedNet: the command is started inside the session's network
	// namespace (where the proxy listens), so bubblewrap keeps it.
	SharedNet bool
	// HostNetwork keeps the host's network namespace (nothing confines
	// the network then: for a caller that confines it otherwise).
	HostNetwork bool
}

// Network is the proxy a sandboxed command reaches.
type Network struct {
	// Bridge is the bridge helper (tackle-sandbox-bridge) run inside the
	// namespace in front of the command.
	Bridge string
	// HTTPSocket and SOCKSSocket are the proxy's unix sockets; the bridge
	// listens on 127.0.0.1:HTTPPort and :SOCKSPort inside.
	HTTPSocket, SOCKSSocket string
	HTTPPort, SOCKSPort     int
}

// Options for Prepare.
type Options struct {
	// WorkingDirs are the session's working directories (cwd first).
	WorkingDirs []string
	// TempDir is the session's temporary directory (created if missing).
	TempDir string
	// Home expands ~ in the settings' paths.
	Home string
	// DenyRead are paths the session's Read deny rules cover (absolute,
	// resolved from the rules by the caller): hidden as denyRead is.
	DenyRead []string
	// Mask are directories a sandboxed command must not see at all:
	// tackle's own state (other sessions' transcripts) and its socket
	// (which would let the command drive tackle from outside the
	// sandbox). Writable paths inside them stay (bound on top).
	Mask []string
}

// Prepare builds the policy of a command from the settings, creating the
// temporary directory and the missing protected directories it holds
// read-only.
func (s *Settings) Prepare(o Options) (*Policy, error) {
	p := &Policy{Seccomp: !s.AllowAllUnixSockets}
	for _, m := range o.Mask {
		if fi, err := os.Stat(m); err == nil && fi.IsDir() {
			p.Mask = append(p.Mask, filepath.Clean(m))
		}
	}
	add := func(dst *[]string, path string) {
		if path != "" && !slices.Contains(*dst, path) {
			*dst = append(*dst, path)
		}
	}
	abs := func(path, base string) string {
		path = strings.TrimSpace(path)
		switch {
		case path == "":
			return ""
		case path == "~" || strings.HasPrefix(path, "~/"):
			path = filepath.Join(o.Home, strings.TrimPrefix(path, "~"))
		case strings.HasPrefix(path, "//"):
			path = path[1:] // Claude Code's absolute-path spelling
		case !filepath.IsAbs(path):
			path = filepath.Join(base, path)
		}
		return filepath.Clean(path)
	}
	base := ""
	if len(o.WorkingDirs) > 0 {
		base = o.WorkingDirs[0]
	}
	if o.TempDir != "" {
		if err := os.MkdirAll(o.TempDir, 0o700); err != nil {
			return nil, fmt.Errorf("creating the sandbox's temporary directory: %w", err)
		}
		add(&p.Write, o.TempDir)
	}
	for _, d := range o.WorkingDirs {
		add(&p.Write, filepath.Clean(d))
	}
	for _, w := range s.AllowWrite {
		if w = abs(w, base); w != "" {
			if _, err := os.Stat(w); err == nil {
				add(&p.Write, w)
			}
		}
	}
	for _, w := range p.Write {
		if w == o.TempDir {
			continue // tackle's own scratch space: no project's hooks or settings live there
		}
		for _, rel := range Protected {
			path := filepath.Join(w, rel)
			if _, err := os.Lstat(path); err != nil {
				if !protectedDirs[rel] || !errors.Is(err, os.ErrNotExist) {
					continue
				}
				if rel == ".git/hooks" {
					if fi, err := os.Stat(filepath.Join(w, ".git")); err != nil || !fi.IsDir() {
						continue // not a repository (or a worktree's .git file)
					}
				}
				if err := os.MkdirAll(path, 0o755); err != nil {
					continue
				}
			}
			add(&p.ReadOnly, path)
		}
	}
	for _, d := range s.DenyWrite {
		if d = abs(d, base); d != "" {
			if _, err := os.Lstat(d); err == nil {
				add(&p.ReadOnly, d)
			}
		}
	}
	hide := func(path string) {
		fi, err := os.Stat(path)
		if err != nil {
			return
		}
		if fi.IsDir() {
			add(&p.HideDirs, path)
		} else {
			add(&p.HideFiles, path)
		}
	}
	for _, d := range s.DenyRead {
		if d = abs(d, base); d != "" && !s.readAllowed(d, base, abs) {
			hide(d)
		}
	}
	for _, d := range o.DenyRead {
		hide(d)
	}
	for _, sock := range s.AllowUnixSockets {
		if sock = abs(sock, base); sock != "" {
			if _, err := os.Stat(sock); err == nil {
				add(&p.Binds, sock)
			}
		}
	}
	return p, nil
}

// readAllowed reports whether allowRead re-allows a denied path.
func (s *Settings) readAllowed(path, base string, abs func(string, string) string) bool {
	for _, a := range s.AllowRead {
		if a = abs(a, base); a != "" && (path == a || strings.HasPrefix(path, a+string(filepath.Separator))) {
			return true
		}
	}
	return false
}

// Command returns the command line that runs argv in the sandbox, in dir.
func (p *Policy) Command(bwrap, dir string, argv []string) []string {
	args := append(p.sandbox(bwrap), "--chdir", dir, "--")
	if p.Network != nil && p.Network.Bridge != "" {
		args = append(args, p.Network.Bridge,
			"--http", fmt.Sprintf("127.0.0.1:%d=%s", p.Network.HTTPPort, p.Network.HTTPSocket),
			"--socks", fmt.Sprintf("127.0.0.1:%d=%s", p.Network.SOCKSPort, p.Network.SOCKSSocket), "--")
	}
	return append(args, argv...)
}

// ServerCommand returns the command line of a sandbox whose one process is
// the exec server (package sandboxexec) at exe, its socket on descriptor
// fd, to start the commands of this policy; ok is false for a policy it
// cannot serve (one whose network is a bridge run in front of each
// command). The server gets a user namespace of its own and, in it, the
// capabilities it needs to give each command a PID namespace
// (CAP_SYS_ADMIN) and to make sure the commands get none
// (CAP_SETPCAP); the seccomp filter and every mount hold for it and its
// commands alike.
func (p *Policy) ServerCommand(bwrap, exe string, fd int) (argv []string, ok bool) {
	if p.Network != nil {
		return nil, false
	}
	args := append(p.sandbox(bwrap), "--unshare-user", "--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP",
		"--chdir", "/", "--")
	return append(args, exe, sandboxexec.FDFlag, strconv.Itoa(fd)), true
}

// sandbox is bubblewrap's command line up to where the sandbox is made.
func (p *Policy) sandbox(bwrap string) []string {
	// A pid namespace of its own: when the command ends, every process it
	// left (a daemon that setsid'd out of the process group included) is
	// killed with the namespace.
	args := []string{bwrap, "--die-with-parent", "--unshare-pid"}
	if !p.HostNetwork && !p.SharedNet {
		args = append(args, "--unshare-net")
	}
	args = append(args, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc")
	// The writable directories, then the masks (an empty, throw-away
	// tmpfs: a mask may lie inside a working directory), then what is
	// writable inside a mask (the session's temporary directory).
	masked := func(path string) bool {
		for _, m := range p.Mask {
			if path == m || strings.HasPrefix(path, m+string(filepath.Separator)) {
				return true
			}
		}
		return false
	}
	for _, w := range p.Write {
		if !masked(w) {
			args = append(args, "--bind", w, w)
		}
	}
	for _, m := range p.Mask {
		args = append(args, "--tmpfs", m)
	}
	for _, w := range p.Write {
		if masked(w) {
			args = append(args, "--bind", w, w)
		}
	}
	for _, b := range p.Binds {
		args = append(args, "--bind", b, b)
	}
	if p.Network != nil {
		for _, sock := range []string{p.Network.HTTPSocket, p.Network.SOCKSSocket} {
			if sock != "" {
				args = append(args, "--bind", sock, sock)
			}
		}
	}
	for _, r := range p.ReadOnly {
		args = append(args, "--ro-bind", r, r)
	}
	for _, f := range p.HideFiles {
		args = append(args, "--ro-bind", "/dev/null", f)
	}
	for _, d := range p.HideDirs {
		args = append(args, "--tmpfs", d, "--remount-ro", d)
	}
	if p.Seccomp {
		args = append(args, "--seccomp", "3")
	}
	return args
}

// Availability is whether the sandbox can run on this machine.
type Availability struct {
	OK bool
	// Bwrap is bubblewrap's path; Why says what is missing or failed.
	Bwrap, Why string
}

var (
	probeMu   sync.Mutex
	probed    *Availability
	probedFor string
)

// Probe checks, once per bwrap path, that bubblewrap runs a command with
// its own mount and network namespaces here (user namespaces enabled,
// no seccomp policy of a container refusing them). bwrap "" finds it in
// $PATH.
func Probe(bwrap string) Availability {
	probeMu.Lock()
	defer probeMu.Unlock()
	if probed != nil && probedFor == bwrap {
		return *probed
	}
	a := probe(bwrap)
	probed, probedFor = &a, bwrap
	return a
}

func probe(bwrap string) Availability {
	path := bwrap
	if path == "" {
		var err error
		if path, err = exec.LookPath("bwrap"); err != nil {
			return Availability{Why: "bubblewrap (bwrap) is not installed: apt-get install bubblewrap"}
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm()&0o111 == 0 {
		return Availability{Why: "bubblewrap is not at " + path + ": install it (apt-get install bubblewrap) or fix the path"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--die-with-parent", "--unshare-net", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--", "/bin/true").CombinedOutput()
	if err != nil {
		why := strings.TrimSpace(string(out))
		if why == "" {
			why = err.Error()
		}
		return Availability{Bwrap: path, Why: "bubblewrap cannot create namespaces here (" + why + "): user namespaces may be disabled (sysctl kernel.unprivileged_userns_clone) or forbidden by a container's seccomp policy"}
	}
	return Availability{OK: true, Bwrap: path}
}

// ResetProbe forgets the probe's result (tests, and a person who just
// installed bubblewrap: tackle sandbox status probes again).
func ResetProbe() {
	probeMu.Lock()
	probed = nil
	probeMu.Unlock()
}
