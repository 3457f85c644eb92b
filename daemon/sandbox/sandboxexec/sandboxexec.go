// Package sandboxexec runs sandboxed commands from a server that lives
// inside the sandbox, so that a command pays for starting a process, not
// for making a sandbox.
//
// Making the sandbox — bubblewrap's user and mount namespaces, a dozen
// bind mounts, the seccomp filter — costs several times what starting
// bash does. A session's commands share one policy, so the daemon makes
// the sandbox once per session and policy, with this package's server
// (the tackle-sandbox-exec binary) as its only process, and asks the
// server to start each command. The server starts it in a PID namespace
// of its own, of which the command's shell is the init: when the shell
// exits the kernel kills whatever it left behind (a daemon that setsid'd
// or double-forked out of the process group included), as bubblewrap's
// own PID namespace did per command.
//
// Creating a PID namespace needs CAP_SYS_ADMIN in the sandbox's user
// namespace, which bubblewrap grants the server (--cap-add). The commands
// get none of it: the server forks from one thread whose capability
// bounding, inheritable and ambient sets it emptied first, so an exec
// leaves a command with no capability at all (as bubblewrap leaves its
// own commands), whatever its uid — it cannot unmount what holds the
// protected paths read-only.
//
// The protocol, on a unix stream socket the daemon passes to the server:
// frames of a 4-byte little-endian length and a JSON message. The daemon
// sends "run" (the command's output descriptor attached with SCM_RIGHTS)
// and "signal"; the server answers "ready" once, then for every run
// "exited" with the wait status, or "error" if it could not start it.
package sandboxexec

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
)

// maxFrame bounds a frame (a command line and its environment).
const maxFrame = 64 << 20

// maxExtra bounds the descriptors a command gets besides its output.
const maxExtra = 4

// request is a message from the daemon.
type request struct {
	Op string `json:"op"` // "run" or "signal"
	ID uint64 `json:"id"`
	// run: the command (argv[0] an absolute path), its environment and
	// directory; the first descriptor attached is its stdout and stderr,
	// the others (at most maxExtra) its descriptors from 3 on.
	Argv []string `json:"argv,omitempty"`
	Env  []string `json:"env,omitempty"`
	Dir  string   `json:"dir,omitempty"`
	// signal: the signal for the command's process group (SIGKILL also
	// kills the shell, and with it the command's PID namespace).
	Sig int `json:"sig,omitempty"`
}

// reply is a message from the server.
type reply struct {
	Op  string `json:"op"` // "ready", "exited" or "error"
	ID  uint64 `json:"id,omitempty"`
	Err string `json:"err,omitempty"`
	// exited: the raw wait status (syscall.WaitStatus).
	Status uint32 `json:"status,omitempty"`
}

// conn is a unix stream socket: a *net.UnixConn (the daemon's side), or
// rawConn (the server's, which blocks in the kernel on its one thread).
type conn interface {
	ReadMsgUnix(b, oob []byte) (n, oobn, flags int, addr *net.UnixAddr, err error)
	WriteMsgUnix(b, oob []byte, addr *net.UnixAddr) (n, oobn int, err error)
	io.ReadWriter
}

// writeFrame writes one frame, with fds attached (SCM_RIGHTS) if any.
func writeFrame(c conn, v any, fds ...int) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	buf := make([]byte, 4+len(body))
	binary.LittleEndian.PutUint32(buf, uint32(len(body)))
	copy(buf[4:], body)
	var oob []byte
	if len(fds) > 0 {
		oob = rights(fds)
	}
	n, oobn, err := c.WriteMsgUnix(buf, oob, nil)
	if err != nil {
		return err
	}
	if oobn != len(oob) {
		return errors.New("the descriptors were not sent")
	}
	if n < len(buf) { // a stream socket may take part of it
		_, err = c.Write(buf[n:])
	}
	return err
}

// readFrame reads one frame into v and returns the descriptors that came
// with it. The descriptors of a frame travel with its first bytes, which
// the length is read with.
func readFrame(c conn, v any) ([]int, error) {
	var hdr [4]byte
	oob := make([]byte, oobSpace)
	n, oobn, _, _, err := c.ReadMsgUnix(hdr[:], oob)
	if err != nil {
		return nil, err
	}
	fds, perr := parseRights(oob[:oobn])
	closeAll := func() {
		for _, fd := range fds {
			closeFD(fd)
		}
	}
	if perr != nil {
		closeAll()
		return nil, perr
	}
	if n < len(hdr) {
		if _, err := io.ReadFull(c, hdr[n:]); err != nil {
			closeAll()
			return nil, err
		}
	}
	size := binary.LittleEndian.Uint32(hdr[:])
	if size > maxFrame {
		closeAll()
		return nil, fmt.Errorf("a frame of %d bytes is over the limit", size)
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(c, body); err != nil {
		closeAll()
		return nil, err
	}
	if err := json.Unmarshal(body, v); err != nil {
		closeAll()
		return nil, fmt.Errorf("a malformed frame: %w", err)
	}
	return fds, nil
}
