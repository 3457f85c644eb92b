-- Small helpers shared by the chat, the prompts and the review.
local M = {}

--- decode parses JSON text (nil for empty or invalid text); null is nil.
function M.decode(s)
  if type(s) ~= 'string' or s == '' then
    return nil
  end
  local ok, v = pcall(vim.json.decode, s, { luanil = { object = true, array = true } })
  return ok and v or nil
end

local keys = { 'file_path', 'notebook_path', 'path', 'pattern', 'command', 'url', 'query', 'description', 'prompt' }

--- summary is one line for a tool call: "Write /p/a.txt", "Bash ls -l".
function M.summary(tool, input)
  local arg
  if type(input) == 'table' then
    for _, k in ipairs(keys) do
      if type(input[k]) == 'string' and input[k] ~= '' then
        arg = input[k]
        break
      end
    end
  end
  local s = (tool or '?') .. (arg and (' ' .. arg:gsub('\n.*', ' …')) or '')
  if #s > 100 then
    s = s:sub(1, 99) .. '…'
  end
  return s
end

--- lines splits text into buffer lines.
function M.lines(text)
  return vim.split(text or '', '\n', { plain = true })
end

--- find_buf is the buffer named name exactly (a "tackle://" name or a
--- file path), or nil.
function M.find_buf(name)
  local real = vim.loop.fs_realpath(name)
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    local n = vim.api.nvim_buf_get_name(b)
    if n == name or (real and n ~= '' and vim.loop.fs_realpath(n) == real) then
      return b
    end
  end
end

--- scratch makes a listed-nowhere buffer named name with lines, replacing
--- the text of an earlier one of that name.
function M.scratch(name, lines, filetype)
  local buf = M.find_buf(name)
  if not buf then
    buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(buf, name)
    vim.bo[buf].bufhidden = 'wipe'
    vim.keymap.set('n', 'q', '<cmd>close<cr>', { buffer = buf, nowait = true })
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  if filetype then
    vim.bo[buf].filetype = filetype
  end
  return buf
end

--- show puts buf in a window: its own if one shows it, else a new split
--- below. It returns the window; focus stays where it was unless enter.
function M.show(buf, enter)
  local win = vim.fn.bufwinid(buf)
  if win == -1 then
    local cur = vim.api.nvim_get_current_win()
    vim.cmd('botright split')
    win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(win, buf)
    if not enter then
      vim.api.nvim_set_current_win(cur)
    end
  elseif enter then
    vim.api.nvim_set_current_win(win)
  end
  return win
end

return M
