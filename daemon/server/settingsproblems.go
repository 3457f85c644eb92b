package server

import tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"

// settingsProblems are the problems of the settings files of directory dir
// ("" for the user's and managed ones only): files that do not parse.
// None when the daemon has no settings.
func (s *Server) settingsProblems(dir string) []*tacklev1.SettingsProblem {
	if s.opts.Settings == nil {
		return nil
	}
	_, problems := s.opts.Settings(dir)
	out := make([]*tacklev1.SettingsProblem, 0, len(problems))
	for _, p := range problems {
		out = append(out, &tacklev1.SettingsProblem{Path: p.Path, Line: int32(p.Line), Column: int32(p.Column), Message: p.Message})
	}
	return out
}
