package server

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/tackle-agent/tackle/daemon/session"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// Skills is the daemon's skill layer as the server needs it.
type Skills interface {
	// List lists a session's skills (with shadowed: also those hidden by
	// another of the same name) and the files that could not be read.
	List(sess *session.Session, shadowed bool) ([]SkillInfo, []SkillProblem)
	// Get returns one skill of the session and its body.
	Get(sess *session.Session, name string) (SkillInfo, string, error)
	// Render invokes a skill as a person does: !`cmd` lines run through
	// the pipeline in mode (or the session's) with the ask timeout.
	Render(ctx context.Context, sess *session.Session, name, args, mode string, timeout time.Duration) (RenderedSkill, error)
}

// SkillInfo is one skill as clients see it.
type SkillInfo struct {
	Name, Description, WhenToUse, Source, Path, ArgumentHint string
	Model, Effort, Context, ShadowedBy                       string
	ModelInvocable, UserInvocable, Active                    bool
	AllowedTools, Paths, Warnings                            []string
}

// SkillProblem is a skill file that could not be read.
type SkillProblem struct {
	Path         string
	Line, Column int
	Message      string
}

// RenderedSkill is a skill's rendered prompt.
type RenderedSkill struct {
	Text         string
	AllowedTools []string
	Model        string
	Effort       string
}

func skillToProto(k SkillInfo) *tacklev1.SkillInfo {
	return &tacklev1.SkillInfo{
		Name: k.Name, Description: k.Description, WhenToUse: k.WhenToUse, Source: k.Source, Path: k.Path,
		ModelInvocable: k.ModelInvocable, UserInvocable: k.UserInvocable, Active: k.Active,
		ArgumentHint: k.ArgumentHint, AllowedTools: k.AllowedTools, Model: k.Model, Effort: k.Effort,
		Context: k.Context, Paths: k.Paths, Warnings: k.Warnings, ShadowedBy: k.ShadowedBy,
	}
}

// skillSession returns the skill layer and the session of a request.
func (s *Server) skillSession(ctx context.Context, id, cwd string) (Skills, *session.Session, error) {
	if s.opts.Skills == nil {
		return nil, nil, toStatus(codedf(codes.Unimplemented, "this daemon has no skill support"))
	}
	sess, err := s.explainSession(ctx, id, cwd)
	if err != nil {
		return nil, nil, toStatus(err)
	}
	return s.opts.Skills, sess, nil
}

// ListSkills implements TackleService.
func (s *Server) ListSkills(ctx context.Context, req *tacklev1.ListSkillsRequest) (*tacklev1.ListSkillsResponse, error) {
	sk, sess, err := s.skillSession(ctx, req.GetSessionId(), req.GetCwd())
	if err != nil {
		return nil, err
	}
	skills, problems := sk.List(sess, req.GetShadowed())
	out := &tacklev1.ListSkillsResponse{Skills: make([]*tacklev1.SkillInfo, 0, len(skills)), Problems: []*tacklev1.SkillProblem{}}
	for _, k := range skills {
		out.Skills = append(out.Skills, skillToProto(k))
	}
	for _, p := range problems {
		out.Problems = append(out.Problems, &tacklev1.SkillProblem{Path: p.Path, Line: int32(p.Line), Column: int32(p.Column), Message: p.Message})
	}
	return out, nil
}

// GetSkill implements TackleService.
func (s *Server) GetSkill(ctx context.Context, req *tacklev1.GetSkillRequest) (*tacklev1.GetSkillResponse, error) {
	sk, sess, err := s.skillSession(ctx, req.GetSessionId(), req.GetCwd())
	if err != nil {
		return nil, err
	}
	k, body, err := sk.Get(sess, req.GetName())
	if err != nil {
		return nil, toStatus(codedf(codes.NotFound, "%v", err))
	}
	return &tacklev1.GetSkillResponse{Skill: skillToProto(k), Body: body}, nil
}

// RenderSkill implements TackleService.
func (s *Server) RenderSkill(ctx context.Context, req *tacklev1.RenderSkillRequest) (*tacklev1.RenderSkillResponse, error) {
	sk, sess, err := s.skillSession(ctx, req.GetSessionId(), req.GetCwd())
	if err != nil {
		return nil, err
	}
	if m := req.GetPermissionMode(); m != "" {
		if err := checkMode(m); err != nil {
			return nil, toStatus(err)
		}
	}
	r, err := sk.Render(ctx, sess, req.GetName(), req.GetArgs(), req.GetPermissionMode(), time.Duration(req.GetPermissionTimeoutSeconds())*time.Second)
	if err != nil {
		return nil, toStatus(codedf(codes.FailedPrecondition, "%v", err))
	}
	return &tacklev1.RenderSkillResponse{Text: r.Text, AllowedTools: r.AllowedTools, Model: r.Model, Effort: r.Effort}, nil
}
