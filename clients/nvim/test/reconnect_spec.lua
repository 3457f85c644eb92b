-- A restarted daemon: the bridge reconnects and subscribes again, the chat
-- goes on with the events after the restart, none twice. This spec runs
-- its own tackled, which it stops and starts.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/helpers.lua')

vim.fn.mkdir(H.dir, 'p')
local sock, state = H.dir .. '/tackled.sock', H.dir .. '/state'

local function cli(...)
  return vim.list_extend({ H.bin .. '/tackle', '--socket', sock, '--no-autostart' }, { ... })
end

local function start_daemon()
  local d = H.job({ H.bin .. '/tackled', '--socket', sock, '--state-dir', state })
  H.wait(function()
    local _, code = H.sh(cli('status'))
    return code == 0
  end, 'tackled to answer')
  return d
end

local function count(text)
  local n = 0
  for _, l in ipairs(require('tackle.chat').lines()) do
    if l:find(text, 1, true) then
      n = n + 1
    end
  end
  return n
end

H.run({
  {
    'the chat goes on after tackled restarts',
    function()
      local daemon = start_daemon()
      H.tackle.setup({ cmd = cli('bridge', '--client-name', 'nvim') })
      local dir = H.project('reconnect', { ['a.txt'] = 'a\n', ['b.txt'] = 'b\n' })
      local sid = H.attached()
      local _, code = H.sh(cli('call', 'Read', vim.json.encode({ file_path = dir .. '/a.txt' }), '--session', sid))
      H.eq(0, code, 'Read a.txt')
      H.wait(function()
        return count('⎿ Read ' .. dir .. '/a.txt') == 1
      end, 'the first Read in the chat')

      vim.fn.jobstop(daemon.id)
      H.wait(function()
        return daemon.code ~= nil
      end, 'tackled to stop')
      H.wait(function()
        return H.noted('reconnecting')
      end, 'the bridge to say it lost tackled')
      daemon = start_daemon()
      H.wait(function()
        return H.noted('reconnected to tackled')
      end, 'the bridge to reconnect', 30000)

      _, code = H.sh(cli('call', 'Read', vim.json.encode({ file_path = dir .. '/b.txt' }), '--session', sid))
      H.eq(0, code, 'Read b.txt after the restart')
      H.wait(function()
        return count('⎿ Read ' .. dir .. '/b.txt') == 1
      end, 'the Read after the restart in the chat')
      H.eq(1, count('⎿ Read ' .. dir .. '/a.txt'), 'the first Read once')
      H.eq(sid, H.tackle.state.sid, 'still attached')
      H.tackle.stop()
      vim.fn.jobstop(daemon.id)
      H.wait(function()
        return daemon.code ~= nil
      end, 'tackled to stop')
    end,
  },
})
