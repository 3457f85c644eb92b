-- Permission requests: one asked by a `tackle call` in another process is
-- answered from Neovim; one that waited before Neovim attached comes from
-- the snapshot; one answered by the CLI closes its open prompt here and is
-- never answered from here.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/helpers.lua')
local permissions = require('tackle.permissions')

-- write_call starts `tackle call Write` in another process; it asks.
local function write_call(sid, path, content)
  return H.job(H.cli('call', 'Write', vim.json.encode({ file_path = path, content = content }), '--session', sid))
end

local function option(items, name, scope)
  for i, o in ipairs(items) do
    if o.option == name and (scope == nil or o.scope == scope) then
      return o, i
    end
  end
  error('no option ' .. name .. ' in ' .. vim.inspect(items))
end

local sid, dir

H.run({
  {
    'a prompt asked by another process is answered from Neovim (allow once)',
    function()
      dir = H.project('perm')
      sid = H.attached()
      local asked
      vim.ui.select = function(items, opts, on_choice)
        asked = { items = items, prompt = opts.prompt, labels = vim.tbl_map(opts.format_item, items) }
        vim.schedule(function()
          on_choice(option(items, 'allow_once'))
        end)
      end
      local path = dir .. '/a.txt'
      local j = write_call(sid, path, 'x')
      H.wait(function()
        return j.code ~= nil
      end, 'tackle call Write to end')
      H.eq(0, j.code, 'tackle call Write: ' .. table.concat(j.out, '\n') .. table.concat(j.err, '\n'))
      H.eq('x', H.read(path), 'the file written')
      H.ok(asked.prompt:find('Write ' .. path, 1, true), 'the prompt names the call: ' .. asked.prompt)
      H.ok(vim.tbl_contains(asked.labels, 'No, and tell the model what to do instead'), vim.inspect(asked.labels))
      H.wait(function()
        return H.chat_has(': allow_once by nvim')
      end, 'the resolution in the chat')
      H.eq(0, permissions.count(), 'nothing waits')
    end,
  },
  {
    'allow always saves the rule for the session',
    function()
      local s2 = vim.trim(H.sh(H.cli('sessions', 'new')))
      vim.cmd('TackleAttach ' .. s2)
      H.wait(function()
        return H.tackle.state.sid == s2 and H.tackle.state.history_until ~= nil
      end, 'attached to ' .. s2)
      vim.ui.select = function(items, _, on_choice)
        on_choice(option(items, 'allow_always', 'SCOPE_SESSION'))
      end
      local j = write_call(s2, dir .. '/b.txt', 'y')
      H.wait(function()
        return j.code ~= nil
      end, 'tackle call Write to end')
      H.eq(0, j.code, 'tackle call Write (always)')
      local asked = false
      vim.ui.select = function()
        asked = true
      end
      local out, code = H.sh(H.cli('call', 'Write', vim.json.encode({ file_path = dir .. '/b.txt', content = 'z' }), '--session', s2))
      H.eq(0, code, 'the second Write runs without asking: ' .. out)
      H.eq(false, asked, 'not asked again')
      H.eq('z', H.read(dir .. '/b.txt'), 'written')
    end,
  },
  {
    'a request that waited before attaching comes from the snapshot; deny with feedback',
    function()
      local other = H.project('perm-late')
      local out = H.sh(H.cli('sessions', 'new'))
      local late = vim.trim(out)
      local path = other .. '/late.txt'
      local j = write_call(late, path, 'late')
      local req = H.pending(late)
      local asked
      vim.ui.select = function(items, opts, on_choice)
        asked = opts.prompt
        on_choice(option(items, 'deny_with_feedback'))
      end
      vim.ui.input = function(_, on_confirm)
        on_confirm('write it somewhere else')
      end
      vim.cmd('TackleAttach ' .. late)
      H.wait(function()
        return j.code ~= nil
      end, 'tackle call Write to end')
      H.eq(1, j.code, 'a denied call is an error result')
      H.ok(asked and asked:find('late.txt', 1, true), 'asked from the snapshot: ' .. tostring(asked))
      H.eq(nil, H.read(path), 'nothing written')
      local text = table.concat(j.out, '\n') .. table.concat(j.err, '\n')
      H.ok(text:find('write it somewhere else', 1, true), 'the feedback reached the call: ' .. text)
    end,
  },
  {
    'a prompt answered by the CLI closes here and is not answered from here',
    function()
      vim.cmd('TackleAttach ' .. sid)
      H.wait(function()
        return H.tackle.state.sid == sid and H.tackle.state.history_until ~= nil
      end, 'attached again')
      -- A select UI that opens a window and waits, as UI plugins do.
      local ui
      vim.ui.select = function(items, opts, on_choice)
        local buf = vim.api.nvim_create_buf(false, true)
        vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.tbl_map(opts.format_item, items))
        local win = vim.api.nvim_open_win(buf, true, { relative = 'editor', row = 1, col = 1, width = 60, height = #items })
        ui = { win = win, items = items, on_choice = on_choice }
      end
      local path = dir .. '/c.txt'
      local j = write_call(sid, path, 'from the cli')
      H.wait(function()
        return ui ~= nil
      end, 'the prompt to open')
      H.eq('tackle: running · 1 waiting', H.tackle.statusline(), 'the statusline counts it')
      local req = H.pending(sid)
      local out, code = H.sh(H.cli('permissions', 'answer', req.id, 'allow'))
      H.eq(0, code, 'tackle permissions answer: ' .. out)
      H.wait(function()
        return not vim.api.nvim_win_is_valid(ui.win)
      end, 'the prompt window to close')
      H.wait(function()
        return j.code ~= nil
      end, 'tackle call Write to end')
      H.eq(0, j.code, 'the CLI answer let it run')
      H.eq('from the cli', H.read(path), 'written')
      H.eq(0, permissions.count(), 'nothing waits')
      H.ok(H.noted('answered elsewhere: allow_once'), 'told so')
      -- A late choice from the closed UI answers nothing.
      local before = #H.notes
      ui.on_choice(option(ui.items, 'deny'))
      vim.wait(300)
      for i = before + 1, #H.notes do
        H.ok(not H.notes[i].msg:find('no pending permission', 1, true), 'a resolved request was answered: ' .. H.notes[i].msg)
      end
      H.ok(not H.chat_has(req.id .. ': deny'), 'no deny in the chat')
    end,
  },
  {
    'beside another attached controller: both see the call, its answer wins',
    function()
      -- tackle attach --json is a terminal client's stream: events out, answers in.
      local events, answered = {}, false
      local att
      att = vim.fn.jobstart(H.cli('attach', '--session', sid, '--json'), {
        on_stdout = function(_, data)
          for _, l in ipairs(data) do
            local ok, ev = pcall(vim.json.decode, l)
            if ok and type(ev) == 'table' then
              table.insert(events, ev)
              if ev.type == 'permission_requested' and not answered then
                answered = true
                vim.fn.chansend(att, vim.json.encode({ answer = ev.permission.request_id, option = 'allow_once' }) .. '\n')
              end
            end
          end
        end,
      })
      H.wait(function()
        return #events > 0
      end, "the other client's snapshot")
      local ui
      vim.ui.select = function(items, opts, on_choice)
        local b = vim.api.nvim_create_buf(false, true)
        local win = vim.api.nvim_open_win(b, false, { relative = 'editor', row = 1, col = 1, width = 40, height = 3 })
        ui = { win = win, on_choice = on_choice }
      end
      local path = dir .. '/e.txt'
      vim.cmd('TackleRun Write ' .. vim.json.encode({ file_path = path, content = 'both' }))
      H.wait(function()
        return H.read(path) == 'both'
      end, 'the Write to run')
      H.wait(function()
        return ui and not vim.api.nvim_win_is_valid(ui.win)
      end, 'the prompt here to close')
      H.wait(function()
        for _, ev in ipairs(events) do
          if ev.type == 'call_result' and ev.tool == 'Write' then
            return true
          end
        end
      end, 'the other client to see the result')
      H.wait(function()
        return H.chat_has('⎿ Write ' .. path .. ': completed')
      end, 'the result in the chat')
      H.ok(H.chat_has(': allow_once by tackle-cli'), 'the other client answered')
      vim.fn.jobstop(att)
    end,
  },
  {
    'TackleCancel cancels a TackleRun call that waits for an answer; its prompt closes',
    function()
      local ui
      vim.ui.select = function(_, _, on_choice)
        local b = vim.api.nvim_create_buf(false, true)
        ui = { win = vim.api.nvim_open_win(b, false, { relative = 'editor', row = 1, col = 1, width = 40, height = 3 }) }
      end
      local path = dir .. '/cancelled.txt'
      vim.cmd('TackleRun Write ' .. vim.json.encode({ file_path = path, content = 'never' }))
      H.wait(function()
        return ui ~= nil and next(H.tackle.state.my_turns) ~= nil
      end, 'the prompt of the run')
      vim.cmd('TackleCancel')
      H.wait(function()
        return H.chat_has('⎿ Write ' .. path .. ': cancelled')
      end, 'the call to end as cancelled')
      H.wait(function()
        return not vim.api.nvim_win_is_valid(ui.win)
      end, 'the prompt to close')
      H.eq(nil, H.read(path), 'nothing written')
      H.eq(0, require('tackle.permissions').count(), 'nothing waits')
      H.wait(function()
        return H.tackle.statusline() == 'tackle: idle'
      end, 'the turn to end')
    end,
  },
  {
    'a prompt dismissed here stays pending until TacklePermissions',
    function()
      local n = 0
      vim.ui.select = function(items, _, on_choice)
        n = n + 1
        if n == 1 then
          return on_choice(nil)
        end
        on_choice(option(items, 'deny'))
      end
      local j = write_call(sid, dir .. '/d.txt', 'no')
      H.wait(function()
        return n == 1 and permissions.count() == 1
      end, 'the dismissed prompt')
      H.eq(nil, j.code, 'the call still waits')
      vim.cmd('TacklePermissions')
      H.wait(function()
        return j.code ~= nil
      end, 'tackle call Write to end')
      H.eq(1, j.code, 'denied')
      H.eq(2, n, 'asked twice')
    end,
  },
})
