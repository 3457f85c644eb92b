-- Test support for the headless specs: the plugin on the runtimepath, the
-- private tackled that scripts/nvim-test.sh started, waits on conditions,
-- the CLI as another client, and an exit status for the run.
local H = {}

local here = debug.getinfo(1, 'S').source:sub(2):match('(.*)/test/[^/]*$')
H.bin = assert(os.getenv('TACKLE_TEST_BIN'), 'TACKLE_TEST_BIN is not set: run scripts/nvim-test.sh')
H.socket = assert(os.getenv('TACKLE_TEST_SOCKET'), 'TACKLE_TEST_SOCKET is not set')
H.dir = assert(os.getenv('TACKLE_TEST_DIR'), 'TACKLE_TEST_DIR is not set')
H.fakemodel = os.getenv('TACKLE_TEST_FAKEMODEL') or ''

vim.opt.rtp:prepend(here)
vim.cmd('runtime plugin/tackle.lua')
H.tackle = require('tackle')
H.tackle.setup({ cmd = { H.bin .. '/tackle', '--socket', H.socket, '--no-autostart', 'bridge', '--client-name', 'nvim' } })

-- Every notification, for assertions.
H.notes = {}
vim.notify = function(msg, level)
  table.insert(H.notes, { msg = msg, level = level })
  io.stdout:write('  notify: ', msg, '\n')
end

--- project makes a fresh project directory (the cwd) with files.
function H.project(name, files)
  local dir = H.dir .. '/' .. name
  vim.fn.mkdir(dir, 'p')
  for rel, content in pairs(files or {}) do
    H.write(dir .. '/' .. rel, content)
  end
  vim.cmd('cd ' .. vim.fn.fnameescape(dir))
  return vim.loop.fs_realpath(dir)
end

function H.write(path, content)
  local f = assert(io.open(path, 'w'))
  f:write(content)
  f:close()
end

function H.read(path)
  local f = io.open(path)
  if not f then
    return nil
  end
  local s = f:read('*a')
  f:close()
  return s
end

--- wait waits until cond() is true, or fails with what.
function H.wait(cond, what, ms)
  if not vim.wait(ms or 20000, cond, 20) then
    error('timed out waiting for ' .. what, 2)
  end
end

function H.eq(want, got, what)
  if not vim.deep_equal(want, got) then
    error(('%s: want %s, got %s'):format(what, vim.inspect(want), vim.inspect(got)), 2)
  end
end

function H.ok(v, what)
  if not v then
    error(what, 2)
  end
  return v
end

--- cli is the argv of the CLI on the private daemon.
function H.cli(...)
  return vim.list_extend({ H.bin .. '/tackle', '--socket', H.socket, '--no-autostart' }, { ... })
end

--- sh runs argv to its end and returns stdout and the exit status.
function H.sh(argv)
  local out = vim.fn.system(argv)
  return out, vim.v.shell_error
end

--- job starts argv in the background; the result table fills in as it runs.
function H.job(argv)
  local j = { out = {}, err = {} }
  j.id = vim.fn.jobstart(argv, {
    cwd = vim.fn.getcwd(),
    stdout_buffered = true,
    stderr_buffered = true,
    on_stdout = function(_, d)
      j.out = d
    end,
    on_stderr = function(_, d)
      j.err = d
    end,
    on_exit = function(_, code)
      j.code = code
    end,
  })
  H.ok(j.id > 0, 'cannot start ' .. argv[1])
  return j
end

--- chat_has tells whether a line of the chat buffer contains text.
function H.chat_has(text)
  for _, l in ipairs(require('tackle.chat').lines()) do
    if l:find(text, 1, true) then
      return true
    end
  end
  return false
end

function H.noted(text)
  for _, n in ipairs(H.notes) do
    if n.msg:find(text, 1, true) then
      return true
    end
  end
  return false
end

--- attached opens :TackleChat in the cwd and waits for the snapshot.
function H.attached()
  vim.cmd('TackleChat')
  H.wait(function()
    return H.tackle.state.sid ~= nil and H.tackle.state.history_until ~= nil
  end, 'the snapshot of the session')
  return H.tackle.state.sid
end

--- pending waits until the daemon lists a permission request of sid.
function H.pending(sid)
  local req
  H.wait(function()
    local out = H.sh(H.cli('permissions', 'pending', '--session', sid, '--json'))
    local ok, list = pcall(vim.json.decode, out)
    req = ok and type(list) == 'table' and list[1] or nil
    return req ~= nil
  end, 'a pending permission request in ' .. sid)
  return req
end

--- run runs the test cases (name → function) in order and exits nvim with
--- 0 when all pass, 1 otherwise.
function H.run(cases)
  local failed = 0
  for _, c in ipairs(cases) do
    io.stdout:write('--- ', c[1], '\n')
    local ok, err = xpcall(c[2], debug.traceback)
    if ok then
      io.stdout:write('ok   ', c[1], '\n')
    else
      failed = failed + 1
      io.stdout:write('FAIL ', c[1], '\n', tostring(err), '\n')
    end
  end
  H.tackle.stop()
  io.stdout:flush()
  vim.cmd(failed == 0 and 'qall!' or 'cquit 1')
end

return H
