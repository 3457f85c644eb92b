package sandboxexec

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// ErrServerGone is the error of calls whose server ended (its commands
// died with it: they are forked with Pdeathsig from its one thread).
var ErrServerGone = errors.New("the sandbox's exec server ended")

// Client is the daemon's side of one server.
type Client struct {
	c   *net.UnixConn
	wmu sync.Mutex // one frame at a time

	mu    sync.Mutex // guards the fields below
	next  uint64
	calls map[uint64]*Call
	err   error         // why the server is gone; set once
	gone  chan struct{} // closed when the reader ends
}

// NewClient waits up to timeout for the server on c to say it is ready,
// and reads its replies from then on. On an error c is closed.
func NewClient(c *net.UnixConn, timeout time.Duration) (*Client, error) {
	if err := c.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		c.Close()
		return nil, err
	}
	var r reply
	fds, err := readFrame(c, &r)
	closeFDs(fds)
	if err == nil && r.Op != "ready" {
		err = fmt.Errorf("the server said %q first", r.Op)
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("the sandbox's exec server did not start: %w", err)
	}
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		c.Close()
		return nil, err
	}
	cl := &Client{c: c, calls: map[uint64]*Call{}, gone: make(chan struct{})}
	go cl.read()
	return cl, nil
}

// Gone is closed once the server has ended (or Close was called).
func (c *Client) Gone() <-chan struct{} { return c.gone }

// Busy reports how many commands are running.
func (c *Client) Busy() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.calls)
}

// Close ends the server: it kills its commands and exits.
func (c *Client) Close() error {
	err := c.c.Close()
	<-c.gone
	return err
}

func (c *Client) read() {
	var err error
	for {
		var r reply
		var fds []int
		fds, err = readFrame(c.c, &r)
		closeFDs(fds)
		if err != nil {
			break
		}
		c.mu.Lock()
		k := c.calls[r.ID]
		if r.Op == "exited" || r.Op == "error" {
			delete(c.calls, r.ID)
		}
		c.mu.Unlock()
		if k == nil {
			continue
		}
		switch r.Op {
		case "error":
			k.err = &StartError{Msg: r.Err}
			close(k.done)
		case "exited":
			k.status = syscall.WaitStatus(r.Status)
			close(k.done)
		}
	}
	c.c.Close()
	c.mu.Lock()
	c.err = fmt.Errorf("%w (%v)", ErrServerGone, err)
	calls := c.calls
	c.calls = map[uint64]*Call{}
	c.mu.Unlock()
	for _, k := range calls {
		k.err = c.err
		close(k.done)
	}
	close(c.gone)
}

// Call is one command started by the server.
type Call struct {
	c      *Client
	id     uint64
	done   chan struct{}
	status syscall.WaitStatus // set before done is closed
	// err is set before done is closed when there is no status: a
	// *StartError, or the server ended first (ErrServerGone).
	err error
}

// StartError is why the server could not start a command.
type StartError struct{ Msg string }

func (e *StartError) Error() string { return e.Msg }

// Run asks the server to start argv (argv[0] an absolute path) in dir
// with env, its stdout and stderr going to out and extra open from
// descriptor 3 on, and returns without waiting for the answer (a round
// trip to the server costs about as much as a gRPC call here): a command
// that could not start is Done with a *StartError.
func (c *Client) Run(argv, env []string, dir string, out *os.File, extra ...*os.File) (*Call, error) {
	if len(extra) > maxExtra {
		return nil, fmt.Errorf("a command takes at most %d descriptors besides its output", maxExtra)
	}
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, c.err
	}
	c.next++
	k := &Call{c: c, id: c.next, done: make(chan struct{})}
	c.calls[k.id] = k
	c.mu.Unlock()
	c.wmu.Lock()
	fds := []int{int(out.Fd())}
	for _, f := range extra {
		fds = append(fds, int(f.Fd()))
	}
	err := writeFrame(c.c, request{Op: "run", ID: k.id, Argv: argv, Env: env, Dir: dir}, fds...)
	c.wmu.Unlock()
	if err != nil {
		c.mu.Lock()
		delete(c.calls, k.id)
		c.mu.Unlock()
		return nil, fmt.Errorf("asking the sandbox's exec server: %w", err)
	}
	return k, nil
}

// Done is closed when the command has exited and its PID namespace is
// gone (or the server ended).
func (k *Call) Done() <-chan struct{} { return k.done }

// Status is the command's wait status, or why there is none (a
// *StartError, or ErrServerGone's error). Valid after Done.
func (k *Call) Status() (syscall.WaitStatus, error) { return k.status, k.err }

// Signal signals the command's process group; SIGKILL ends its PID
// namespace, everything it started included.
func (k *Call) Signal(sig syscall.Signal) error {
	select {
	case <-k.done:
		return nil
	default:
	}
	k.c.wmu.Lock()
	defer k.c.wmu.Unlock()
	return writeFrame(k.c.c, request{Op: "signal", ID: k.id, Sig: int(sig)})
}
