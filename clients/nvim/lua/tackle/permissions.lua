-- The permission requests of the attached session, asked one at a time with
-- vim.ui.select. Any client may answer a request and the first answer wins:
-- a request resolved elsewhere is dropped, its open prompt closed, and it is
-- never answered from here.
local util = require('tackle.util')

local M = {}

local entries = {} -- requestId → { req = PermissionRequest, status = nil | 'dismissed' | 'answered' }
local order = {} -- requestIds, oldest first
local active -- the entry being asked: { id, wins = windows its prompt opened }
local answer -- function(req, decision, scope, feedback), from setup

local decisions = {
  allow_once = 'DECISION_ALLOW_ONCE',
  allow_always = 'DECISION_ALLOW_ALWAYS',
  deny = 'DECISION_DENY',
  deny_with_feedback = 'DECISION_DENY',
}

--- setup sets the function that sends an answer.
function M.setup(answer_fn)
  answer = answer_fn
end

local function options(req)
  if req.options and #req.options > 0 then
    return req.options
  end
  local opts = { { option = 'allow_once', label = 'Yes, this once' } }
  if req.alwaysRule and req.alwaysRule ~= '' then
    table.insert(opts, { option = 'allow_always', label = 'Yes, and allow ' .. req.alwaysRule, rule = req.alwaysRule })
  end
  table.insert(opts, { option = 'deny', label = 'No' })
  table.insert(opts, { option = 'deny_with_feedback', label = 'No, and tell the model what to do instead' })
  return opts
end

local function title(req)
  local who = req.agent and req.agent.type and (' [' .. req.agent.type .. ']') or ''
  local why = (req.reason and req.reason ~= '') and (' (' .. req.reason .. ')') or ''
  return ('tackle%s: allow %s?%s'):format(who, util.summary(req.tool, util.decode(req.inputJson)), why)
end

local function close(a)
  for _, w in ipairs(a.wins or {}) do
    if vim.api.nvim_win_is_valid(w) then
      pcall(vim.api.nvim_win_close, w, true)
    end
  end
  if vim.fn.mode() == 'i' then
    vim.cmd('stopinsert')
  end
end

local ask

--- next asks the oldest request not yet answered (nor dismissed, unless
--- again is set) when no prompt is open.
function M.next(again)
  if active then
    return
  end
  for _, id in ipairs(order) do
    local e = entries[id]
    if e.status == nil or (again and e.status == 'dismissed') then
      ask(id)
      return
    end
  end
end

ask = function(id)
  local e = entries[id]
  local a = { id = id }
  active = a
  local before = {}
  for _, w in ipairs(vim.api.nvim_list_wins()) do
    before[w] = true
  end
  local function finish(status)
    if active == a then
      active = nil
    end
    e.status = status
    M.next()
  end
  vim.ui.select(options(e.req), {
    prompt = title(e.req),
    kind = 'tackle_permission',
    format_item = function(o)
      return o.label
    end,
  }, function(choice)
    if active ~= a or not entries[id] then
      return -- resolved elsewhere meanwhile
    end
    if not choice then
      return finish('dismissed')
    end
    if choice.option ~= 'deny_with_feedback' then
      answer(e.req, decisions[choice.option] or 'DECISION_DENY', choice.option == 'allow_always' and (choice.scope or 'SCOPE_PROJECT') or nil)
      return finish('answered')
    end
    vim.ui.input({ prompt = 'What should the model do instead? ' }, function(text)
      if active ~= a or not entries[id] then
        return
      end
      if text == nil then
        return finish('dismissed')
      end
      answer(e.req, 'DECISION_DENY', nil, text)
      finish('answered')
    end)
  end)
  if active == a then
    a.wins = vim.tbl_filter(function(w)
      return not before[w]
    end, vim.api.nvim_list_wins())
  end
end

--- add records a pending request and asks it (when auto is set).
function M.add(req, auto)
  if entries[req.requestId] then
    return
  end
  entries[req.requestId] = { req = req }
  table.insert(order, req.requestId)
  if auto then
    M.next()
  end
end

--- resolve drops a request that ended (answered by anyone, timed out or
--- cancelled) and closes its prompt if it is open. It returns the request
--- and whether it was answered from here.
function M.resolve(id)
  local e = entries[id]
  if not e then
    return nil
  end
  entries[id] = nil
  order = vim.tbl_filter(function(x)
    return x ~= id
  end, order)
  if active and active.id == id then
    local a = active
    active = nil
    close(a)
    M.next()
  end
  return e.req, e.status == 'answered'
end

--- sync makes the requests those of a snapshot: the ones missing there ended.
function M.sync(reqs, auto)
  local keep = {}
  for _, r in ipairs(reqs or {}) do
    keep[r.requestId] = true
  end
  for _, id in ipairs(vim.deepcopy(order)) do
    if not keep[id] then
      M.resolve(id)
    end
  end
  for _, r in ipairs(reqs or {}) do
    M.add(r, auto)
  end
end

--- reset forgets every request (another session was attached).
function M.reset()
  if active then
    close(active)
  end
  entries, order, active = {}, {}, nil
end

--- count is the number of requests that wait for an answer.
function M.count()
  return #order
end

--- pending lists the requests that wait, oldest first.
function M.pending()
  return vim.tbl_map(function(id)
    return entries[id].req
  end, order)
end

return M
