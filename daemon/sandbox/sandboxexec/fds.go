package sandboxexec

import (
	"fmt"
	"io"
	"net"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// oobSpace is room for the descriptors of one frame (one is ever sent).
var oobSpace = unix.CmsgSpace(4 * 4)

func rights(fds []int) []byte { return unix.UnixRights(fds...) }

// parseRights returns the descriptors of the control messages in oob
// (received close-on-exec: Go's ReadMsgUnix asks for MSG_CMSG_CLOEXEC).
func parseRights(oob []byte) ([]int, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("a malformed control message: %w", err)
	}
	var fds []int
	for i := range msgs {
		got, err := unix.ParseUnixRights(&msgs[i])
		if err != nil {
			for _, fd := range fds {
				closeFD(fd)
			}
			return nil, err
		}
		fds = append(fds, got...)
	}
	return fds, nil
}

func closeFD(fd int) { unix.Close(fd) } //nolint:errcheck // nothing to do about it

// closeOnExecAbove marks every open descriptor above 2 close-on-exec, so
// that nothing the server inherited reaches a command.
func closeOnExecAbove() {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
}

// rawConn is a socket used with blocking system calls: a read blocks the
// calling thread in the kernel, which wakes it directly when a request
// comes (no hand-off through the runtime's poller to a goroutine locked
// to its thread).
type rawConn struct{ fd int }

func (c rawConn) ReadMsgUnix(b, oob []byte) (n, oobn, flags int, addr *net.UnixAddr, err error) {
	for {
		n, oobn, flags, _, err = unix.Recvmsg(c.fd, b, oob, unix.MSG_CMSG_CLOEXEC)
		if err != unix.EINTR {
			break
		}
	}
	if err == nil && n == 0 && len(b) > 0 {
		err = io.EOF
	}
	return n, oobn, flags, nil, err
}

func (c rawConn) WriteMsgUnix(b, oob []byte, _ *net.UnixAddr) (n, oobn int, err error) {
	for {
		n, err = unix.SendmsgN(c.fd, b, oob, nil, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return n, 0, err
	}
	return n, len(oob), nil
}

func (c rawConn) Read(b []byte) (int, error) {
	for {
		n, err := unix.Read(c.fd, b)
		if err == unix.EINTR {
			continue
		}
		if err == nil && n == 0 && len(b) > 0 {
			return 0, io.EOF
		}
		return n, err
	}
}

func (c rawConn) Write(b []byte) (int, error) {
	written := 0
	for written < len(b) {
		n, err := unix.Write(c.fd, b[written:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return written, err
		}
		written += n
	}
	return written, nil
}
