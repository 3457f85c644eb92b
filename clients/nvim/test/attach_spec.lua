-- Attaching: :TackleChat creates the directory's default session and
-- subscribes; calls run by another client show in the chat; :TackleRun,
-- :TackleTools, :TackleMcp, :TackleSessions and the statusline.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/helpers.lua')

H.run({
  {
    'TackleChat attaches the default session of the cwd',
    function()
      local dir = H.project('attach', { ['hello.txt'] = 'hello from the project\n' })
      local sid = H.attached()
      H.eq(dir, H.tackle.state.session.cwd, 'the session cwd')
      H.eq('tackle', vim.bo.filetype, 'the chat window is current')
      H.ok(H.chat_has('── session ' .. sid), 'the chat names the session')
      H.eq('tackle: idle', H.tackle.statusline(), 'statusline')
    end,
  },
  {
    "another client's call in the directory's default session shows in the chat",
    function()
      local file = vim.fn.getcwd() .. '/hello.txt'
      local out, code = H.sh(H.cli('call', 'Read', vim.json.encode({ file_path = file })))
      H.eq(0, code, 'tackle call Read: ' .. out)
      H.wait(function()
        return H.chat_has('⎿ Read ' .. file .. ': completed')
      end, 'the Read result in the chat')
      H.ok(H.chat_has('● Read ' .. file), 'the call line')
    end,
  },
  {
    'TackleRun Grep <cword> shows the result',
    function()
      vim.cmd('wincmd p')
      vim.cmd('edit hello.txt')
      vim.api.nvim_win_set_cursor(0, { 1, 11 }) -- on "project"
      vim.cmd([[TackleRun Grep {"pattern":"<cword>","output_mode":"content"}]])
      local buf
      H.wait(function()
        buf = require('tackle.util').find_buf('tackle://result/' .. 'nvim_' .. vim.fn.getpid() .. '_1')
        return buf ~= nil
      end, 'the result buffer of :TackleRun')
      local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n')
      H.ok(text:find('hello from the project', 1, true), 'the Grep result: ' .. text)
      H.eq('hello.txt', vim.fn.expand('%:t'), 'focus stays on the file')
    end,
  },
  {
    'TackleRun with % reads the current file; bad JSON is refused',
    function()
      H.eq(vim.json.encode({ file_path = vim.fn.expand('%:p') }), H.tackle.input_json('{"file_path":"%"}'), '% expands')
      H.eq(vim.json.encode({ file_path = vim.fn.expand('%:p') }), H.tackle.input_json('{"file_path":""}'), 'empty file_path')
      H.eq('{}', H.tackle.input_json(''), 'no input')
      H.eq('{"a":1}', H.tackle.input_json('{"a":1}'), 'untouched input passes verbatim')
      H.eq(nil, H.tackle.input_json('[1]'), 'an array is refused')
      vim.cmd('TackleRun Read {"file_path":"%"}')
      H.wait(function()
        local b = require('tackle.util').find_buf('tackle://result/nvim_' .. vim.fn.getpid() .. '_2')
        return b and table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false)):find('hello from the project', 1, true)
      end, 'the Read result of %')
    end,
  },
  {
    'TackleTools and TackleMcp list',
    function()
      vim.cmd('TackleTools')
      H.wait(function()
        return vim.api.nvim_buf_get_name(0) == 'tackle://tools'
      end, 'the tools buffer')
      local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
      H.ok(text:match('\nRead%s') or text:match('^Read%s'), 'Read is listed: ' .. text:sub(1, 300))
      vim.cmd('close')
      vim.cmd('TackleMcp')
      H.wait(function()
        return vim.api.nvim_buf_get_name(0) == 'tackle://mcp'
      end, 'the mcp buffer')
      H.eq({ 'no MCP servers' }, vim.api.nvim_buf_get_lines(0, 0, -1, false), 'no servers configured')
      vim.cmd('close')
    end,
  },
  {
    'TackleSessions picks a session to attach',
    function()
      local other = H.project('attach-other')
      local out, code = H.sh(H.cli('sessions', 'new'))
      H.eq(0, code, 'sessions new: ' .. out)
      local sid = vim.trim(out)
      local seen
      vim.ui.select = function(items, opts, on_choice)
        seen = vim.tbl_map(opts.format_item, items)
        for _, s in ipairs(items) do
          if s.id == sid then
            return on_choice(s)
          end
        end
        on_choice(nil)
      end
      vim.cmd('TackleSessions')
      H.wait(function()
        return H.tackle.state.sid == sid and H.tackle.state.history_until ~= nil
      end, 'attached to ' .. sid)
      H.ok(#seen >= 2, 'both sessions listed: ' .. vim.inspect(seen))
      H.eq(other, H.tackle.state.session.cwd, 'the other session')
      H.ok(H.chat_has('── session ' .. sid), 'its chat buffer')
    end,
  },
  {
    'attaching an unknown session keeps the one attached',
    function()
      local sid = H.tackle.state.sid
      vim.cmd('TackleAttach no-such-session')
      H.wait(function()
        return H.noted('attaching no-such-session')
      end, 'the error about the unknown session')
      H.eq(sid, H.tackle.state.sid, 'still attached')
    end,
  },
})
