package daemon

import (
	"github.com/tackle-agent/tackle/daemon/config"
	"github.com/tackle-agent/tackle/daemon/session"
)

// This file gives the daemon's layers a session's Claude Code plugins
// (config.Settings.Plugins: the plugins its settings turn on, through
// enabledPlugins and ~/.claude/plugins, and the directories of tackle's
// "plugins" setting). Each layer takes its part: skills and commands
// (skills.go), agents (agentdef.Sources.Plugins, which subagents.go's
// types fills), hooks (hook.Parse reads them from the settings) and MCP
// servers (config.Loader.MCPServers).

// plugins are the plugins of sess's project. An untrusted project's files
// never turn one on (config's trust rules): what is here the person, their
// administrator or a trusted project chose.
func (d *Daemon) plugins(sess *session.Session) []config.Plugin {
	st, _ := d.loader.Load(sess.Root())
	ps, _ := st.Plugins()
	return ps
}

// pluginProblems are the problems of the plugins of sess's project: a
// plugin enabled but not installed, a manifest that does not parse, a
// hooks or MCP file that cannot be read.
func (d *Daemon) pluginProblems(sess *session.Session) []config.PluginProblem {
	st, _ := d.loader.Load(sess.Root())
	_, probs := st.Plugins()
	return probs
}

// pluginProblemText is a problem without its path (listed beside it).
func pluginProblemText(p config.PluginProblem) string {
	if p.Plugin == "" {
		return p.Message
	}
	return "plugin " + p.Plugin + ": " + p.Message
}
