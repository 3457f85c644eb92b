package server

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/session"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// Agent is the daemon's query loop as the server needs it.
type Agent interface {
	// Prompt starts a prompt on sess, or queues it while another runs.
	Prompt(sess *session.Session, req PromptRequest) (PromptAccepted, error)
	// CancelPrompt cancels the running prompt (promptID, if set, must be
	// its id); ErrNoPrompt-like errors are reported as FailedPrecondition.
	CancelPrompt(sess *session.Session, promptID string) error
	// Compact replaces the session's conversation by its summary; it fails
	// while a prompt runs.
	Compact(ctx context.Context, sess *session.Session, instructions string) (summary string, usage event.Usage, err error)
	// Snapshot is the session's prompt state for a subscriber's snapshot:
	// the running prompt (nil when idle), the text streaming now, and the
	// queued prompts.
	Snapshot(sessionID string) (running *event.Prompt, partial string, queued []*event.Prompt)
	// Stop cancels every running prompt, refuses new ones and waits for
	// the loops to end (the server stops it before the dispatcher, so the
	// cancelled calls' results still reach the transcript).
	Stop()
}

// PromptRequest is one prompt, as the loop takes it.
type PromptRequest struct {
	Text, Model, PermissionMode, ClientID string
	MaxTurns                              int
	Images                                []PromptImage
	// Files are file references, read through the pipeline into the prompt.
	Files []string
	// NonInteractive: the sender leaves at the prompt's end (tackle run).
	NonInteractive bool
}

// PromptImage is an image of a prompt.
type PromptImage struct {
	MediaType string
	Data      []byte
}

// promptImageTypes are the image types the model APIs take.
var promptImageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// maxPromptImage bounds one image (the Anthropic API's limit is 5 MB).
const maxPromptImage = 5 << 20

// promptFromProto checks and converts a prompt.
func promptFromProto(req *tacklev1.PromptRequest) (PromptRequest, error) {
	if err := checkMode(req.GetPermissionMode()); err != nil {
		return PromptRequest{}, err
	}
	if req.GetMaxTurns() < 0 {
		return PromptRequest{}, invalidf("max_turns must not be negative")
	}
	out := PromptRequest{Text: req.GetText(), Model: req.GetModel(), PermissionMode: req.GetPermissionMode(),
		ClientID: req.GetClientId(), MaxTurns: int(req.GetMaxTurns()), Files: req.GetFiles(), NonInteractive: req.GetNonInteractive()}
	for i, im := range req.GetImages() {
		if !promptImageTypes[im.GetMediaType()] {
			return PromptRequest{}, invalidf("image %d: media type %q is not one of image/png, image/jpeg, image/gif, image/webp", i+1, im.GetMediaType())
		}
		if len(im.GetData()) == 0 || len(im.GetData()) > maxPromptImage {
			return PromptRequest{}, invalidf("image %d: %d bytes; an image has 1 byte to 5 MB", i+1, len(im.GetData()))
		}
		out.Images = append(out.Images, PromptImage{MediaType: im.GetMediaType(), Data: im.GetData()})
	}
	return out, nil
}

// PromptAccepted says what became of a prompt.
type PromptAccepted struct {
	PromptID string
	Queued   bool
}

// agentService implements AgentService on the Server's sessions.
type agentService struct {
	tacklev1.UnimplementedAgentServiceServer
	s *Server
}

// Prompt implements AgentService.
func (a *agentService) Prompt(ctx context.Context, req *tacklev1.PromptRequest) (*tacklev1.PromptResponse, error) {
	sess, err := a.s.session(ctx, req.GetSessionId())
	if err != nil {
		return nil, toStatus(err)
	}
	pr, err := promptFromProto(req)
	if err != nil {
		return nil, toStatus(err)
	}
	acc, err := a.s.opts.Agent.Prompt(sess, pr)
	if err != nil {
		return nil, toStatus(err)
	}
	return &tacklev1.PromptResponse{PromptId: acc.PromptID, Queued: acc.Queued}, nil
}

// CancelPrompt implements AgentService.
func (a *agentService) CancelPrompt(ctx context.Context, req *tacklev1.CancelPromptRequest) (*tacklev1.CancelPromptResponse, error) {
	sess, err := a.s.session(ctx, req.GetSessionId())
	if err != nil {
		return nil, toStatus(err)
	}
	if err := a.s.opts.Agent.CancelPrompt(sess, req.GetPromptId()); err != nil {
		if errors.Is(err, ErrNoPrompt) {
			return &tacklev1.CancelPromptResponse{}, nil
		}
		return nil, toStatus(codedf(codes.FailedPrecondition, "cancelling: %v", err))
	}
	return &tacklev1.CancelPromptResponse{Cancelled: true}, nil
}

// Compact implements AgentService.
func (a *agentService) Compact(ctx context.Context, req *tacklev1.CompactRequest) (*tacklev1.CompactResponse, error) {
	sess, err := a.s.session(ctx, req.GetSessionId())
	if err != nil {
		return nil, toStatus(err)
	}
	summary, u, err := a.s.opts.Agent.Compact(ctx, sess, req.GetInstructions())
	if err != nil {
		return nil, toStatus(err)
	}
	return &tacklev1.CompactResponse{Summary: summary, Usage: promptToProto(&event.Prompt{Usage: &u}).GetUsage()}, nil
}

// ErrNoPrompt is what Agent.CancelPrompt returns when nothing runs.
var ErrNoPrompt = errors.New("no prompt is running")

func promptToProto(p *event.Prompt) *tacklev1.PromptInfo {
	if p == nil {
		return nil
	}
	out := &tacklev1.PromptInfo{
		Id: p.ID, ClientId: p.ClientID, Text: p.Text, Model: p.Model, StopReason: p.StopReason,
		Requests: int32(p.Requests), Error: p.Error, FinalText: p.FinalText,
	}
	if u := p.Usage; u != nil {
		out.Usage = &tacklev1.Usage{InputTokens: int64(u.InputTokens), OutputTokens: int64(u.OutputTokens),
			CacheCreationInputTokens: int64(u.CacheCreationInputTokens), CacheReadInputTokens: int64(u.CacheReadInputTokens)}
	}
	return out
}

func deltaToProto(d *event.Delta) *tacklev1.AssistantDelta {
	if d == nil {
		return nil
	}
	return &tacklev1.AssistantDelta{PromptId: d.PromptID, Kind: d.Kind, Index: int32(d.Index), Text: d.Text, ToolUseId: d.ToolUseID, Name: d.Name}
}

func retryToProto(r *event.Retry) *tacklev1.ModelRetry {
	if r == nil {
		return nil
	}
	return &tacklev1.ModelRetry{PromptId: r.PromptID, Attempt: int32(r.Attempt), WaitMs: r.WaitMS, Status: int32(r.Status), Reason: r.Reason}
}
