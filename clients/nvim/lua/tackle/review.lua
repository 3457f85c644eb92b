-- Edit review: the diff of a call that changed a file opens in a split (one
-- window, reused), and the file's buffer is reloaded — unless it has unsaved
-- changes, which are never overwritten: the person is warned instead.
local util = require('tackle.util')

local M = {}

M.edit_tools = { Edit = true, Write = true, MultiEdit = true, NotebookEdit = true }

local win -- the review window this plugin opened

--- show opens diff (a unified diff) in the review window.
function M.show(call_id, diff)
  local lines = util.lines(diff)
  if lines[#lines] == '' then
    table.remove(lines)
  end
  local buf = util.scratch('tackle://diff/' .. call_id, lines, 'diff')
  if win and vim.api.nvim_win_is_valid(win) then
    vim.api.nvim_win_set_buf(win, buf)
  else
    win = util.show(buf, false)
  end
  return buf
end

--- reload rereads the buffer of path after tackle changed the file.
function M.reload(path)
  local buf = util.find_buf(path)
  if not buf or not vim.api.nvim_buf_is_loaded(buf) then
    return
  end
  if vim.bo[buf].modified then
    vim.notify(
      ('tackle changed %s, which has unsaved changes here: not reloaded (:e! takes the file, :w keeps yours)'):format(path),
      vim.log.levels.WARN
    )
    return
  end
  -- :edit, not :checktime: it also loads a file created after the buffer
  -- was opened, keeps the cursor, and the reload can be undone.
  vim.api.nvim_buf_call(buf, function()
    vim.cmd('silent edit')
  end)
end

--- on_result handles a call's result: for an edit, the review and the reload.
--- call is { name, input } from turn_started (nil when unknown).
function M.on_result(call, result, opts)
  local name = result.name or (call and call.name)
  if not M.edit_tools[name] or result.isError or (result.status and result.status ~= 'completed') then
    return false
  end
  if opts.review and result.display and result.display ~= '' then
    M.show(result.id or (call and call.id) or name, result.display)
  end
  local input = call and call.input or {}
  local path = input.file_path or input.notebook_path
  if path then
    M.reload(path)
  end
  return true
end

return M
