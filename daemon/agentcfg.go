package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/tackle-agent/tackle/daemon/agent/sysprompt"
	"github.com/tackle-agent/tackle/daemon/model"
	"github.com/tackle-agent/tackle/daemon/session"
	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/daemon/toolsearch"
)

// This file gives a prompt what the model is told: the system prompt
// (tackle's text, the environment, the memory files) and the model's
// configuration.

// systemPrompt is the system prompt of one prompt of sess: built once per
// prompt, so every request of it is the same (and caches). The
// environment (git status included) is the session's first prompt's, as
// Claude Code takes it at the start of a conversation: info caches it.
func (d *Daemon) systemPrompt(sess *session.Session, modelName string, deferred []string, info sysprompt.Info) string {
	return d.buildSystemPrompt(sess, modelName, deferred, info, nil)
}

// agentSystemPrompt is a sub-agent's: its definition's body, then the
// environment and (unless it is a read-only scout) the memory files.
func (d *Daemon) agentSystemPrompt(sess *session.Session, modelName string, deferred []string, info sysprompt.Info, body string, noMemory bool) string {
	return d.buildSystemPrompt(sess, modelName, deferred, info, func(info sysprompt.Info, mem []sysprompt.MemoryFile) string {
		if noMemory {
			mem = nil
		}
		return sysprompt.BuildAgent(body, info, mem)
	})
}

func (d *Daemon) buildSystemPrompt(sess *session.Session, modelName string, deferred []string, info sysprompt.Info, build func(sysprompt.Info, []sysprompt.MemoryFile) string) string {
	info.Cwd = sess.Cwd() // the git status is the start's; the directory is today's
	if dirs := sess.WorkingDirs(); len(dirs) > 1 {
		info.WorkingDirs = dirs[1:]
	}
	info.Model = modelName
	mem, problems := sysprompt.Memory(sysprompt.MemoryOptions{
		Cwd: sess.Cwd(), Home: d.opts.Home, ConfigHome: d.opts.ConfigHome, Trusted: d.trust.Trusted(sess.Root()),
	})
	for _, p := range problems {
		d.log.Warn("a memory file was not loaded", "session", sess.ID(), "problem", p.Error())
	}
	if build == nil {
		build = sysprompt.Build
	}
	var b strings.Builder
	b.WriteString(build(info, mem))
	if len(deferred) > 0 {
		b.WriteString("\n\n# Deferred tools\n\nThese tools exist but their schemas are not loaded; load one with ToolSearch (query \"select:NAME\") before calling it:\n")
		for _, n := range toolsearch.Listing(deferred, 0) {
			b.WriteString("- " + n + "\n")
		}
	}
	return b.String()
}

// modelCfg is the model a prompt talks to.
type modelCfg struct {
	Provider  model.Provider
	Model     string
	MaxTokens int
	Resolved  model.ResolvedModel
}

// modelConfig resolves the model of a prompt of sess: override (tackle run
// --model), the settings of its project (model, modelAliases, provider,
// env, as the workspace trust lets them apply) and the session's
// environment (the client's), then the daemon's.
func (d *Daemon) modelConfig(sess *session.Session, override string) (modelCfg, error) {
	var ms model.ModelSettings
	if st, _ := d.loader.Load(sess.Root()); st != nil {
		sub := map[string]json.RawMessage{}
		for _, k := range []string{"model", "modelAliases", "provider", "env"} {
			if v, ok := st.Raw[k]; ok {
				sub[k] = v
			}
		}
		b, _ := json.Marshal(sub)
		if err := json.Unmarshal(b, &ms); err != nil {
			return modelCfg{}, fmt.Errorf("reading the model settings (model, modelAliases, provider, env): %w", err)
		}
	}
	ms.Override = override
	env := envLookup(sess.Environ())
	p, r, err := model.Resolve(ms, func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return os.Getenv(k)
	})
	if err != nil {
		return modelCfg{}, err
	}
	return modelCfg{Provider: p, Model: r.Model, MaxTokens: r.MaxTokens, Resolved: r}, nil
}

// envLookup indexes KEY=VALUE pairs.
func envLookup(environ []string) map[string]string {
	out := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}

// settingInt is the integer setting key of sess's project, def when unset
// or not an integer.
func (d *Daemon) settingInt(sess *session.Session, key string, def int) int {
	st, _ := d.loader.Load(sess.Root())
	if st == nil {
		return def
	}
	var v int
	if raw, ok := st.Raw[key]; ok && json.Unmarshal(raw, &v) == nil {
		return v
	}
	return def
}

// gatherEnv is the environment part of a session's system prompt.
func gatherEnv(cwd string) sysprompt.Info {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return sysprompt.Gather(ctx, cwd)
}

// ask puts one question to the small model of env's session (or to
// modelName, an alias or id): a prompt hook, WebFetch's prompt. The answer
// is the response's text.
func (d *Daemon) ask(ctx context.Context, env tool.Env, modelName, system, prompt string) (string, error) {
	sess, err := d.sessions.Get(ctx, env.SessionID())
	if err != nil {
		return "", err
	}
	cfg, err := d.modelConfig(sess, "")
	if err != nil {
		return "", err
	}
	m := cfg.Resolved.SmallModel
	if modelName != "" {
		m = cfg.Resolved.ModelFor(modelName)
	}
	req := model.Request{Model: m, MaxTokens: min(cfg.MaxTokens, 4096), System: system,
		Messages: []model.Message{{Role: model.RoleUser, Content: []model.Block{{Type: model.BlockText, Text: prompt}}}}}
	st, err := cfg.Provider.Stream(ctx, req)
	if err != nil {
		return "", err
	}
	defer st.Close()
	for _, err := range st.Events() {
		if err != nil {
			return "", err
		}
	}
	var b strings.Builder
	for _, blk := range st.Response().Message.Content {
		if blk.Type == model.BlockText {
			b.WriteString(blk.Text)
		}
	}
	return b.String(), nil
}
