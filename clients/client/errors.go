package client

import (
	"context"
	"errors"
	"fmt"

	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Typed errors of the client. Every error returned by this package that has
// one of these meanings wraps the matching value, so callers test with
// errors.Is.
var (
	// ErrNoDaemon: no daemon answers on the socket (and none was started).
	ErrNoDaemon = errors.New("no tackled daemon is running")
	// ErrPermissionDenied: the socket or the daemon refused this user.
	ErrPermissionDenied = errors.New("permission denied")
	// ErrNotFound: a named session (or other object) does not exist.
	ErrNotFound = errors.New("not found")
	// ErrInvalidArgument: the daemon rejected a request as malformed.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrUnavailable: the daemon went away or is shutting down.
	ErrUnavailable = errors.New("daemon unavailable")
	// ErrStartFailed: autostart could not bring up a daemon.
	ErrStartFailed = errors.New("starting tackled failed")
)

// convertError turns a gRPC status error into an error wrapping one of the
// package's typed errors, once, at the edge. Other errors pass through.
func convertError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	var kind error
	switch st.Code() {
	case codes.NotFound:
		kind = ErrNotFound
	case codes.InvalidArgument, codes.FailedPrecondition, codes.OutOfRange:
		kind = ErrInvalidArgument
	case codes.PermissionDenied, codes.Unauthenticated:
		kind = ErrPermissionDenied
	case codes.Unavailable:
		kind = ErrUnavailable
	case codes.Canceled:
		return fmt.Errorf("%s: %w", st.Message(), context.Canceled)
	case codes.DeadlineExceeded:
		return fmt.Errorf("%s: %w", st.Message(), context.DeadlineExceeded)
	default:
		return fmt.Errorf("%s (%s)", st.Message(), st.Code())
	}
	return fmt.Errorf("%w: %s", kind, st.Message())
}

// StreamError is a problem the daemon reported for one message on the Attach
// stream (the stream goes on). Code is a gRPC status code name.
type StreamError struct {
	Code    string
	Message string
	// Ref is the ref of the RunBatch this error answers, if any.
	Ref string
	// ResubscribeFromSeq is set when the daemon ended the subscription
	// because the client fell behind: subscribe again from it.
	ResubscribeFromSeq uint64
}

// NewStreamError converts the protobuf message.
func NewStreamError(e *tacklev1.StreamError) *StreamError {
	return &StreamError{Code: e.GetCode(), Message: e.GetMessage(), Ref: e.GetRef(), ResubscribeFromSeq: e.GetResubscribeFromSeq()}
}

// Error implements error.
func (e *StreamError) Error() string { return e.Message + " (" + e.Code + ")" }

// Unwrap maps the code to the package's typed errors.
func (e *StreamError) Unwrap() error {
	switch e.Code {
	case "NotFound":
		return ErrNotFound
	case "InvalidArgument", "FailedPrecondition", "OutOfRange":
		return ErrInvalidArgument
	case "PermissionDenied", "Unauthenticated":
		return ErrPermissionDenied
	case "Unavailable":
		return ErrUnavailable
	}
	return nil
}

// Err converts an error of a Service() call as the Client's own methods
// do: a gRPC status becomes its message, wrapped around ErrNotFound,
// ErrInvalidArgument, ... for errors.Is.
func Err(err error) error { return convertError(err) }
