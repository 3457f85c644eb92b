-- tackle.nvim: Neovim as a client of tackled, through `tackle bridge` (JSON-RPC
-- on stdio, protojson bodies). One bridge process holds one Attach stream,
-- subscribed to one session at a time: its events fill the chat buffer, its
-- permission requests are asked here, its edits are reviewed and reloaded.
-- Other clients (a terminal `tackle chat`) see the same session; the first
-- answer to a permission request wins.
local rpc = require('tackle.rpc')
local chat = require('tackle.chat')
local permissions = require('tackle.permissions')
local review = require('tackle.review')
local util = require('tackle.util')

local M = {}

M.config = {
  -- cmd starts the bridge; add '--socket', PATH or '--no-autostart' before 'bridge'.
  cmd = { 'tackle', 'bridge', '--client-name', 'nvim' },
  -- review opens the diff of every edit in a split.
  review = true,
  -- auto_prompt asks permission requests as they arrive (else :TacklePermissions).
  auto_prompt = true,
  -- history replays a session's earlier events into the chat on attach.
  history = true,
  -- permission_mode is the mode of :TackleRun calls (nil: the session's).
  permission_mode = nil,
}

-- state is the plugin's one state: the bridge and the attached session.
local S = {
  conn = nil, -- the bridge connection
  client_id = nil, -- ours, from welcome
  sid = nil, -- the attached session
  session = nil, -- its Session message, kept up to date
  last_seq = 0, -- the newest event seen
  history_until = nil, -- events up to this seq were there before we attached
  calls = {}, -- call id → { id, name, input } from turn_started
  turns = {}, -- running turn ids
  my_turns = {}, -- the turns of :TackleRun calls (by turn id), for :TackleCancel
  prompt = nil, -- the running prompt (PromptInfo)
  runs = {}, -- call ids of :TackleRun calls, waiting for their results
  tool_names = {},
  session_ids = {},
}
M.state = S

local function notify(msg, level)
  vim.notify('tackle: ' .. msg, level or vim.log.levels.INFO)
end

local function changed()
  vim.cmd('redrawstatus!')
  vim.api.nvim_exec_autocmds('User', { pattern = 'TackleUpdate', modeline = false })
end

--- setup sets options (see :help tackle-config).
function M.setup(opts)
  for k, v in pairs(opts or {}) do
    M.config[k] = v
  end
end

local handlers = {}

local function connection()
  if S.conn then
    return S.conn
  end
  local conn, err = rpc.start(M.config.cmd, function(method, params)
    local h = handlers[method]
    if h then
      h(params)
    end
  end, function(code, stderr)
    S.conn, S.sid, S.client_id = nil, nil, nil
    permissions.reset()
    if not S.stopping then
      notify(('the bridge exited (%d)%s'):format(code, stderr ~= '' and (':\n' .. stderr) or ''), vim.log.levels.ERROR)
    end
    S.stopping = false
    changed()
  end)
  if not conn then
    notify(err, vim.log.levels.ERROR)
  end
  S.conn = conn
  return conn
end

--- request calls method on the bridge; cb(result) runs on success, errors
--- are shown (or given to on_err).
function M.request(method, params, cb, on_err)
  local conn = connection()
  if not conn then
    return
  end
  conn:request(method, params, function(err, result)
    if err then
      if on_err then
        on_err(err)
      else
        notify(method:gsub('^.*/', '') .. ': ' .. rpc.error_text(err), vim.log.levels.ERROR)
      end
    elseif cb then
      cb(result or {})
    end
  end)
end

function handlers.welcome(w)
  S.client_id = w.clientId
end

function handlers.snapshot(s)
  if not S.sid then
    return
  end
  S.session = s.session or S.session
  if S.history_until == nil then
    S.history_until = tonumber(s.session and s.session.lastSeq) or 0
  end
  S.prompt = (s.prompt and s.prompt.id) and s.prompt or nil
  chat.snapshot(s)
  permissions.sync(s.pendingPermissions, M.config.auto_prompt)
  changed()
end

local function show_result(id, r)
  local lines = {}
  for _, b in ipairs(r.content or {}) do
    vim.list_extend(lines, b.type == 'text' and util.lines(b.text) or { ('[%s %s]'):format(b.type, b.mimeType or '') })
  end
  if #lines == 0 then
    lines = util.lines(r.display)
  end
  util.show(util.scratch('tackle://result/' .. id, lines), false)
  if r.isError then
    notify(('%s: %s'):format(r.name or 'call', r.status or 'failed'), vim.log.levels.WARN)
  end
end

local function resolved(res)
  local req, mine = permissions.resolve(res.requestId)
  if req and not mine then
    local what = util.summary(req.tool, util.decode(req.inputJson))
    if res.clientName and res.clientName ~= '' then
      notify(('%s was answered elsewhere: %s by %s'):format(what, res.decision or '?', res.clientName))
    else
      notify(('the permission request of %s ended: %s'):format(what, res.decision or '?'))
    end
  end
end

function handlers.event(e)
  if not S.sid or (e.sessionId and e.sessionId ~= S.sid) then
    return
  end
  local seq = tonumber(e.seq) or 0
  if seq <= S.last_seq then
    return -- seen before a resubscription
  end
  S.last_seq = seq
  local live = seq > (S.history_until or 0)
  local t = e.type
  if t == 'turn_started' then
    S.turns[e.turnId or ''] = true
    for _, c in ipairs(e.calls or {}) do
      S.calls[c.id] = { id = c.id, name = c.name, input = util.decode(c.inputJson) or {} }
    end
  elseif t == 'turn_ended' then
    S.turns[e.turnId or ''], S.my_turns[e.turnId or ''] = nil, nil
  elseif t == 'permission_requested' and e.permission and live then
    permissions.add(e.permission, M.config.auto_prompt)
  elseif t == 'permission_resolved' and e.resolution then
    resolved(e.resolution)
  elseif t == 'prompt_started' then
    S.prompt = e.prompt
  elseif t == 'prompt_ended' then
    S.prompt = nil
  elseif (t == 'session_updated' or t == 'todos_updated') and e.session and S.session then
    for k, v in pairs(e.session) do
      if v ~= '' then
        S.session[k] = v
      end
    end
  end
  chat.event(e, S.calls)
  if t == 'call_result' and e.result then
    local call = S.calls[e.callId]
    if live and not review.on_result(call, e.result, { review = M.config.review }) and S.runs[e.callId] then
      show_result(e.callId, e.result)
    end
    S.calls[e.callId], S.runs[e.callId] = nil, nil
  end
  changed()
end

function handlers.error(se)
  local from = tonumber(se.resubscribeFromSeq or 0) or 0
  if from > 0 and S.sid then
    M.request('attach/subscribe', { sessionId = S.sid, fromSeq = se.resubscribeFromSeq })
    return
  end
  notify(('%s (%s)'):format(se.message or 'error', se.code or '?'), vim.log.levels.WARN)
end

function handlers.batchAccepted(b)
  if S.runs[b.ref] then
    S.my_turns[b.turnId] = true
  end
end

function handlers.disconnected(p)
  notify((p.reason or 'the connection to tackled ended'), vim.log.levels.WARN)
end

function handlers.reconnected(p)
  notify(('reconnected to tackled%s'):format(p.fromSeq and (' (events from ' .. p.fromSeq .. ')') or ''))
end

--- attach subscribes the bridge's stream to session sid (replacing the one
--- attached before, unless sid does not exist); cb(sid) runs once the
--- subscription is sent.
function M.attach(sid, cb)
  M.request('tackle.v1.TackleService/GetSession', { id = sid }, function(r)
    if S.sid ~= sid then
      permissions.reset()
      S.session, S.last_seq, S.history_until, S.prompt = nil, 0, nil, nil
      S.calls, S.turns, S.my_turns, S.runs = {}, {}, {}, {}
    end
    S.sid = sid
    S.session = S.session or r.session
    chat.buffer(sid, M.prompt)
    local params = { sessionId = sid, liveOnly = not M.config.history }
    if S.last_seq > 0 then
      params.fromSeq = tostring(S.last_seq + 1)
    end
    M.request('attach/subscribe', params, function()
      if cb then
        cb(sid)
      end
    end)
    M.request('tackle.v1.TackleService/ListTools', { sessionId = sid }, function(t)
      S.tool_names = vim.tbl_map(function(x)
        return x.name
      end, t.tools or {})
    end, function() end)
  end, function(err)
    notify(('attaching %s: %s'):format(sid, rpc.error_text(err)), vim.log.levels.ERROR)
  end)
end

local function environ()
  local env = {}
  for k, v in pairs(vim.fn.environ()) do
    table.insert(env, k .. '=' .. v)
  end
  return env
end

--- with_session runs cb(sid) with the attached session, attaching the
--- current directory's default session first when none is.
function M.with_session(cb)
  if S.sid and S.conn then
    return cb(S.sid)
  end
  M.request('tackle.v1.TackleService/CreateSession', { cwd = vim.fn.getcwd(), defaultForCwd = true, env = environ() }, function(r)
    M.attach(r.session.id, cb)
  end)
end

--- chat opens the chat buffer of the attached session (:TackleChat).
function M.chat()
  M.with_session(function()
    chat.open()
  end)
end

--- prompt sends text to the session's agent (AgentService/Prompt).
function M.prompt(text)
  M.with_session(function(sid)
    M.request('tackle.v1.AgentService/Prompt', { sessionId = sid, text = text, clientId = S.client_id }, function(r)
      if r.queued then
        notify('the prompt joins the one running')
      end
    end)
  end)
end

--- cancel cancels the running prompt and the calls run from here.
function M.cancel()
  if not S.sid then
    return notify('no session attached')
  end
  local runs = next(S.my_turns) ~= nil
  M.request('tackle.v1.AgentService/CancelPrompt', { sessionId = S.sid }, function(r)
    if not r.cancelled and not runs then
      notify('nothing runs')
    end
  end)
  for turn in pairs(S.my_turns) do
    M.request('attach/cancel', { sessionId = S.sid, turnId = turn })
  end
end

local cexpand = { ['<cword>'] = true, ['<cWORD>'] = true, ['<cfile>'] = true }

-- expand replaces "%" and <cword>, <cWORD>, <cfile> in the strings of v.
local function expand(v)
  if type(v) == 'string' then
    if v == '%' then
      return vim.fn.expand('%:p'), true
    end
    local n = 0
    local s = v:gsub('<c%a+>', function(m)
      if cexpand[m] then
        n = n + 1
        return vim.fn.expand(m)
      end
    end)
    return s, n > 0
  elseif type(v) == 'table' then
    local any = false
    for k, x in pairs(v) do
      local nv, c = expand(x)
      v[k], any = nv, any or c
    end
    return v, any
  end
  return v, false
end

--- input_json builds a tool input from the text of :TackleRun: "%" (or an
--- empty file_path) is the current buffer's file, <cword> the word under
--- the cursor. It returns nil and an error for text that is not an object.
function M.input_json(text)
  text = vim.trim(text or '')
  if text == '' then
    text = '{}'
  end
  local input = util.decode(text)
  if type(input) ~= 'table' or vim.tbl_islist(input) and next(input) ~= nil then
    return nil, 'the input must be a JSON object: ' .. text
  end
  local any
  input, any = expand(input)
  if input.file_path == '' then
    input.file_path, any = vim.fn.expand('%:p'), true
  end
  if not any then
    return text
  end
  return next(input) == nil and '{}' or vim.json.encode(input)
end

local run_seq = 0

--- run runs one tool call in the attached session (attach/runBatch). Its
--- result opens in a split (an edit's as a diff).
function M.run(tool, text)
  local input, err = M.input_json(text)
  if not input then
    return notify(err, vim.log.levels.ERROR)
  end
  M.with_session(function(sid)
    run_seq = run_seq + 1
    local id = ('nvim_%d_%d'):format(vim.fn.getpid(), run_seq)
    S.runs[id] = true
    M.request('attach/runBatch', {
      sessionId = sid,
      ref = id,
      calls = { { id = id, name = tool, inputJson = input } },
      permissionMode = M.config.permission_mode,
    })
  end)
end

--- run_cmd is :TackleRun {tool} {json}.
function M.run_cmd(args)
  local tool, text = (args or ''):match('^(%S+)%s*(.*)$')
  if not tool then
    return notify('usage: :TackleRun {tool} {json}', vim.log.levels.ERROR)
  end
  M.run(tool, text)
end

--- sessions lists the sessions to pick one to attach (:TackleSessions).
function M.sessions()
  M.request('tackle.v1.TackleService/ListSessions', {}, function(r)
    local list = r.sessions or {}
    S.session_ids = vim.tbl_map(function(s)
      return s.id
    end, list)
    if #list == 0 then
      return notify('no sessions')
    end
    vim.ui.select(list, {
      prompt = 'tackle: attach to a session',
      format_item = function(s)
        return ('%s  %s  %s%s'):format(s.id, s.cwd, s.updatedAt or '', s.id == S.sid and '  (attached)' or '')
      end,
    }, function(s)
      if s then
        M.attach(s.id, chat.open)
      end
    end)
  end)
end

--- attach_cmd is :TackleAttach [SESSION].
function M.attach_cmd(sid)
  if not sid or sid == '' then
    return M.sessions()
  end
  M.attach(sid, chat.open)
end

local function target()
  return S.sid and { sessionId = S.sid } or { cwd = vim.fn.getcwd() }
end

--- tools lists the session's tools in a split (:TackleTools).
function M.tools()
  M.request('tackle.v1.TackleService/ListTools', target(), function(r)
    local lines = {}
    for _, t in ipairs(r.tools or {}) do
      local a = t.attributes or {}
      local flags = (a.readOnly and 'ro' or 'rw') .. (a.deferred and ',deferred' or '')
      table.insert(lines, ('%-28s %-12s %s'):format(t.name, flags, util.lines(t.description)[1]))
    end
    for _, d in ipairs(r.deferredListing or {}) do
      table.insert(lines, d .. '  (deferred)')
    end
    util.show(util.scratch('tackle://tools', lines), true)
  end)
end

--- mcp lists the session's MCP servers and their state (:TackleMcp).
function M.mcp()
  M.request('tackle.v1.TackleService/ListMcpServers', target(), function(r)
    local lines = {}
    for _, s in ipairs(r.servers or {}) do
      table.insert(
        lines,
        ('%-20s %-14s %-6s %3d tools  %s%s'):format(
          s.name,
          s.state or '?',
          s.transport or '',
          s.tools or 0,
          s.target or '',
          (s.error and s.error ~= '') and ('  error: ' .. s.error) or ''
        )
      )
    end
    for _, p in ipairs(r.problems or {}) do
      table.insert(lines, ('problem: %s %s: %s'):format(p.path or '', p.server or '', p.message or ''))
    end
    if #lines == 0 then
      lines = { 'no MCP servers' }
    end
    util.show(util.scratch('tackle://mcp', lines), true)
  end)
end

--- ask_permissions asks the waiting permission requests again, the
--- dismissed ones too (:TacklePermissions).
function M.ask_permissions()
  if permissions.count() == 0 then
    return notify('no permission request waits')
  end
  permissions.next(true)
end

--- statusline is "tackle: idle", "tackle: running · 2 waiting", or "" when
--- no session is attached.
function M.statusline()
  if not S.sid then
    return ''
  end
  local state = (S.prompt or next(S.turns)) and 'running' or 'idle'
  local n = permissions.count()
  return 'tackle: ' .. state .. (n > 0 and (' · ' .. n .. ' waiting') or '')
end

--- stop ends the bridge.
function M.stop()
  if S.conn then
    S.stopping = true
    S.conn:stop()
  end
end

permissions.setup(function(req, decision, scope, feedback)
  M.request('attach/permissionAnswer', {
    sessionId = S.sid,
    requestId = req.requestId,
    decision = decision,
    scope = scope,
    feedback = feedback,
  })
end)

return M
