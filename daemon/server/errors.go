package server

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"

	"github.com/tackle-agent/tackle/daemon/session"
)

// invalidError is a request the client got wrong.
type invalidError struct{ msg string }

func (e *invalidError) Error() string { return e.msg }

func invalidf(format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...)}
}

// codedError carries its own status code (NotFound, FailedPrecondition, ...).
type codedError struct {
	code codes.Code
	msg  string
}

func (e *codedError) Error() string { return e.msg }

func codedf(code codes.Code, format string, args ...any) error {
	return &codedError{code: code, msg: fmt.Sprintf(format, args...)}
}

// codeOf maps a domain error to its gRPC status code. It is the one place
// where this happens. An error with an InvalidArgument() bool method that
// returns true (from the packages the server is given) is InvalidArgument,
// one with an Unavailable() bool method returning true Unavailable, one
// with FailedPrecondition() bool FailedPrecondition.
func codeOf(err error) codes.Code {
	var inv *invalidError
	var coded *codedError
	var marked interface{ InvalidArgument() bool }
	var unavailable interface{ Unavailable() bool }
	var precondition interface{ FailedPrecondition() bool }
	switch {
	case err == nil:
		return codes.OK
	case errors.As(err, &inv):
		return codes.InvalidArgument
	case errors.As(err, &marked) && marked.InvalidArgument():
		return codes.InvalidArgument
	case errors.As(err, &unavailable) && unavailable.Unavailable():
		return codes.Unavailable
	case errors.As(err, &precondition) && precondition.FailedPrecondition():
		return codes.FailedPrecondition
	case errors.As(err, &coded):
		return coded.code
	case errors.Is(err, session.ErrInvalid):
		return codes.InvalidArgument
	case errors.Is(err, session.ErrNotFound):
		return codes.NotFound
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	}
	if s, ok := status.FromError(err); ok {
		return s.Code()
	}
	return codes.Internal
}

// toStatus turns an error into a gRPC status error.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.Error(codeOf(err), err.Error())
}

// streamError turns an error into a StreamError message.
func streamError(err error, ref string) *tacklev1.ServerMessage {
	msg := err.Error()
	if s, ok := status.FromError(err); ok {
		msg = s.Message()
	}
	return &tacklev1.ServerMessage{Msg: &tacklev1.ServerMessage_Error{Error: &tacklev1.StreamError{
		Code:    codeOf(err).String(),
		Message: msg,
		Ref:     ref,
	}}}
}
