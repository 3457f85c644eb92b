package sandbox

import (
	"encoding/binary"
	"fmt"
	"sync"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The sandbox's seccomp filter: a sandboxed command cannot create unix
// sockets (socket(AF_UNIX, …) fails with EPERM), so it cannot reach a
// daemon on this machine — a Docker socket, an SSH agent, a desktop bus —
// from inside the sandbox; socketpair stays allowed (programs talk to
// their own children with it). A filter cannot tell socket paths apart,
// so, as in Claude Code on Linux, allowUnixSockets cannot admit single
// sockets: allowAllUnixSockets turns the filter off.

var (
	seccompOnce sync.Once
	seccompProg []byte
	seccompErr  error
)

// SeccompProgram is the filter as bubblewrap's --seccomp reads it: the
// struct sock_filter array, for this machine's architecture.
func SeccompProgram() ([]byte, error) {
	seccompOnce.Do(func() {
		p := seccomp.Policy{
			DefaultAction: seccomp.ActionAllow,
			Syscalls: []seccomp.SyscallGroup{{
				Action: seccomp.ActionErrno,
				NamesWithCondtions: []seccomp.NameWithConditions{{
					Name:       "socket",
					Conditions: []seccomp.Condition{{Argument: 0, Operation: seccomp.Equal, Value: unix.AF_UNIX}},
				}},
			}},
		}
		insts, err := p.Assemble()
		if err != nil {
			seccompErr = fmt.Errorf("assembling the sandbox's seccomp filter: %w", err)
			return
		}
		raw, err := bpf.Assemble(insts)
		if err != nil {
			seccompErr = fmt.Errorf("assembling the sandbox's seccomp filter: %w", err)
			return
		}
		b := make([]byte, 0, 8*len(raw))
		for _, r := range raw {
			b = binary.NativeEndian.AppendUint16(b, r.Op)
			b = append(b, r.Jt, r.Jf)
			b = binary.NativeEndian.AppendUint32(b, r.K)
		}
		seccompProg = b
	})
	return seccompProg, seccompErr
}
