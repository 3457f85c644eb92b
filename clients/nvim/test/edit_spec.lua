-- Edit review: an edit's diff opens in a split (filetype diff), the edited
-- file's buffer is reloaded, and a buffer with unsaved changes is left alone
-- with a warning.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/helpers.lua')
local util = require('tackle.util')

local sid, dir, file

local function lines(buf)
  return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
end

-- diff_buf is the review buffer showing a diff of path, or nil.
local function diff_buf(path)
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(b):find('^tackle://diff/') and vim.bo[b].filetype == 'diff' then
      if table.concat(lines(b), '\n'):find(path, 1, true) then
        return b
      end
    end
  end
end

local function cli_ok(...)
  local out, code = H.sh(H.cli(...))
  H.eq(0, code, table.concat({ ... }, ' ') .. ': ' .. out)
  return out
end

H.run({
  {
    "an edit by another client reloads the file's buffer and opens its diff",
    function()
      dir = H.project('edit', { ['notes.txt'] = 'hello\nworld\n' })
      file = dir .. '/notes.txt'
      sid = H.attached()
      vim.cmd('wincmd p | edit ' .. vim.fn.fnameescape(file))
      local buf, win = vim.api.nvim_get_current_buf(), vim.api.nvim_get_current_win()
      cli_ok('call', 'Read', vim.json.encode({ file_path = file }), '--session', sid)
      cli_ok('call', 'Edit', vim.json.encode({ file_path = file, old_string = 'world', new_string = 'tackle' }), '--session', sid, '--permission-mode', 'acceptEdits')
      H.wait(function()
        return lines(buf)[2] == 'tackle'
      end, 'the buffer to be reloaded')
      H.eq({ 'hello', 'tackle' }, lines(buf), 'the buffer')
      H.eq(false, vim.bo[buf].modified, 'not modified')
      local d = H.ok(diff_buf(file), 'a diff buffer of the edit')
      local text = table.concat(lines(d), '\n')
      H.ok(text:find('\n%-world') and text:find('\n%+tackle'), 'the diff: ' .. text)
      H.ok(vim.fn.bufwinid(d) ~= -1, 'the diff is shown')
      H.eq(win, vim.api.nvim_get_current_win(), 'focus stays in the file')
    end,
  },
  {
    'a buffer with unsaved changes is not overwritten',
    function()
      local buf = vim.api.nvim_get_current_buf()
      vim.api.nvim_buf_set_lines(buf, 0, 1, false, { 'my unsaved line' })
      cli_ok('call', 'Edit', vim.json.encode({ file_path = file, old_string = 'tackle', new_string = 'again' }), '--session', sid, '--permission-mode', 'acceptEdits')
      H.wait(function()
        return H.noted('unsaved changes')
      end, 'the warning')
      H.eq({ 'my unsaved line', 'tackle' }, lines(buf), 'the buffer keeps its changes')
      H.eq(true, vim.bo[buf].modified, 'still modified')
      H.eq('hello\nagain\n', H.read(file), 'the file changed')
      vim.cmd('edit!')
      H.eq({ 'hello', 'again' }, lines(buf), ':e! takes the file')
    end,
  },
  {
    'TackleRun Write % asks here, then reloads a new file and reviews it',
    function()
      vim.ui.select = function(items, _, on_choice)
        for _, o in ipairs(items) do
          if o.option == 'allow_once' then
            return on_choice(o)
          end
        end
      end
      local new = dir .. '/new.txt'
      vim.cmd('edit ' .. vim.fn.fnameescape(new))
      local buf = vim.api.nvim_get_current_buf()
      vim.cmd([[TackleRun Write {"file_path":"%","content":"created\n"}]])
      H.wait(function()
        return lines(buf)[1] == 'created'
      end, 'the new file in its buffer')
      H.eq('created\n', H.read(new), 'the file')
      H.ok(diff_buf(new), 'a diff of the new file')
      H.ok(H.chat_has(': allow_once by nvim'), 'answered from here')
    end,
  },
  {
    'with review off only the buffer is reloaded',
    function()
      H.tackle.setup({ review = false })
      for _, b in ipairs(vim.api.nvim_list_bufs()) do
        if vim.api.nvim_buf_get_name(b):find('^tackle://diff/') then
          vim.api.nvim_buf_delete(b, { force = true })
        end
      end
      local buf = util.find_buf(file)
      cli_ok('call', 'Read', vim.json.encode({ file_path = file }), '--session', sid)
      cli_ok('call', 'Edit', vim.json.encode({ file_path = file, old_string = 'again', new_string = 'quiet' }), '--session', sid, '--permission-mode', 'acceptEdits')
      H.wait(function()
        return lines(buf)[2] == 'quiet'
      end, 'the buffer to be reloaded')
      H.eq(nil, diff_buf(file), 'no diff opened')
      H.tackle.setup({ review = true })
    end,
  },
})
