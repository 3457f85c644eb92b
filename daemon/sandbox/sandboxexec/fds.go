package sandboxexec

import (
	"fmt"
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
