-- The chat buffer of the attached session: a prompt buffer whose last line
-- is where a prompt is typed; the session's events are written above it —
-- prompts, the streaming answer, one line per tool call, permission
-- requests, the todo list.
local util = require('tackle.util')

local M = {}

local ns = vim.api.nvim_create_namespace('tackle_chat')
local buf -- the chat buffer of the attached session
local stream -- the answer streaming now: { mark, n = its line count, text }

local function valid()
  return buf and vim.api.nvim_buf_is_valid(buf)
end

local function scroll()
  local last = vim.api.nvim_buf_line_count(buf)
  for _, w in ipairs(vim.fn.win_findbuf(buf)) do
    if w ~= vim.api.nvim_get_current_win() or vim.fn.mode() ~= 'i' then
      vim.api.nvim_win_set_cursor(w, { last, 0 })
    end
  end
end

--- append writes lines above the prompt line.
local function append(lines)
  if not valid() then
    return
  end
  local n = vim.api.nvim_buf_line_count(buf)
  vim.api.nvim_buf_set_lines(buf, n - 1, n - 1, false, lines)
  scroll()
end

--- buffer makes (or finds) the chat buffer of session sid; on_prompt(text)
--- gets what is typed on its prompt line.
function M.buffer(sid, on_prompt)
  local name = 'tackle://chat/' .. sid
  stream = nil
  buf = util.find_buf(name)
  if buf then
    return buf
  end
  buf = vim.api.nvim_create_buf(true, true)
  vim.api.nvim_buf_set_name(buf, name)
  vim.bo[buf].buftype = 'prompt'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].filetype = 'tackle'
  vim.fn.prompt_setprompt(buf, '> ')
  local this = buf
  vim.fn.prompt_setcallback(buf, function(text)
    -- The typed line is shown again when the daemon starts the prompt.
    local n = vim.api.nvim_buf_line_count(this)
    if n >= 2 and vim.api.nvim_buf_get_lines(this, n - 2, n - 1, false)[1] == '> ' .. text then
      vim.api.nvim_buf_set_lines(this, n - 2, n - 1, false, {})
    end
    if vim.trim(text) ~= '' then
      on_prompt(text)
    end
  end)
  vim.keymap.set('n', '<C-c>', '<cmd>TackleCancel<cr>', { buffer = buf, desc = 'tackle: cancel the prompt' })
  return buf
end

--- open shows the chat buffer in a window (a vertical split unless one
--- shows it already) and enters it.
function M.open()
  if not valid() then
    return
  end
  local win = vim.fn.bufwinid(buf)
  if win == -1 then
    vim.cmd('botright vsplit')
    win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(win, buf)
  end
  vim.api.nvim_set_current_win(win)
  scroll()
end

--- lines returns the chat's text (for tests and :TackleChat users' scripts).
function M.lines()
  return valid() and vim.api.nvim_buf_get_lines(buf, 0, -1, false) or {}
end

local function stream_end()
  if stream and valid() then
    vim.api.nvim_buf_del_extmark(buf, ns, stream.mark)
  end
  stream = nil
end

local function stream_set(text)
  if not stream then
    append({ '' })
    local row = vim.api.nvim_buf_line_count(buf) - 2
    stream = { mark = vim.api.nvim_buf_set_extmark(buf, ns, row, 0, { right_gravity = false }), n = 1, text = '' }
  end
  stream.text = text
  local row = vim.api.nvim_buf_get_extmark_by_id(buf, ns, stream.mark, {})[1]
  local lines = util.lines(text)
  vim.api.nvim_buf_set_lines(buf, row, row + stream.n, false, lines)
  stream.n = #lines
  scroll()
end

local function message_text(json)
  local m = util.decode(json)
  local parts = {}
  for _, b in ipairs(m and m.content or {}) do
    if b.type == 'text' and b.text then
      table.insert(parts, b.text)
    end
  end
  return table.concat(parts, '')
end

local function todo_lines(json)
  local lines = { 'Todos:' }
  for _, t in ipairs(util.decode(json) or {}) do
    local mark = ({ completed = '[x]', in_progress = '[~]' })[t.status] or '[ ]'
    local text = t.status == 'in_progress' and t.activeForm or t.content
    table.insert(lines, '  ' .. mark .. ' ' .. (text or t.content or ''))
  end
  return lines
end

--- snapshot writes the head of a session just subscribed to.
function M.snapshot(s)
  if not valid() then
    return
  end
  local sess = s.session or {}
  append({ ('── session %s in %s'):format(sess.id or '?', sess.cwd or '?') })
  if s.partialText and s.partialText ~= '' then
    stream_set(s.partialText)
  end
end

--- event writes one session event. calls maps call ids to { name, input }.
function M.event(e, calls)
  if not valid() then
    return
  end
  local t = e.type
  if t == 'prompt_started' and e.prompt then
    stream_end()
    append(vim.tbl_map(function(l)
      return '> ' .. l
    end, util.lines(e.prompt.text)))
  elseif t == 'assistant_delta' and e.delta and e.delta.kind == 'text' then
    stream_set(((stream and stream.text) or '') .. (e.delta.text or ''))
  elseif t == 'assistant_message' then
    local text = message_text(e.messageJson)
    if text ~= '' then
      stream_set(text)
    end
    stream_end()
  elseif t == 'turn_started' then
    stream_end()
    for _, c in ipairs(e.calls or {}) do
      append({ '● ' .. util.summary(c.name, util.decode(c.inputJson)) })
    end
  elseif t == 'call_result' and e.result then
    local r = e.result
    local line = '  ⎿ ' .. util.summary(r.name or e.tool, (calls[e.callId] or {}).input) .. ': ' .. (r.status or '?')
    if r.isError and r.content and r.content[1] and r.content[1].text then
      line = line .. ' — ' .. util.lines(r.content[1].text)[1]
    end
    append({ line })
  elseif t == 'permission_requested' and e.permission then
    local p = e.permission
    append({ ('? %s asks for permission (%s)'):format(util.summary(p.tool, util.decode(p.inputJson)), p.requestId) })
  elseif t == 'permission_resolved' and e.resolution then
    local r = e.resolution
    local by = (r.clientName and r.clientName ~= '') and (' by ' .. r.clientName) or ''
    append({ ('  ⎿ %s: %s%s'):format(r.requestId, r.decision or '?', by) })
  elseif t == 'todos_updated' and e.session then
    append(todo_lines(e.session.todosJson))
  elseif t == 'prompt_ended' and e.prompt then
    stream_end()
    local p = e.prompt
    append({ ('── %s%s'):format(p.stopReason or 'ended', (p.error and p.error ~= '') and (': ' .. p.error) or '') })
  elseif t == 'notice' then
    append({ '! ' .. (e.text or '') })
  end
end

return M
