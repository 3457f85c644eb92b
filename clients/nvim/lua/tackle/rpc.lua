-- The connection to `tackle bridge`: a child process speaking JSON-RPC 2.0,
-- one JSON object a line each way. Requests get a callback; everything else
-- the bridge sends (the Attach stream's messages) goes to on_notify.
local M = {}

local Conn = {}
Conn.__index = Conn

local decode_opts = { luanil = { object = true, array = true } }

local function report(err)
  vim.notify('tackle: ' .. tostring(err), vim.log.levels.ERROR)
end

--- Starts cmd (a list) and returns the connection, or nil and an error.
--- on_notify(method, params) gets the notifications; on_exit(code, stderr)
--- runs when the process ends.
function M.start(cmd, on_notify, on_exit)
  local self = setmetatable({ next_id = 0, callbacks = {}, partial = '', stderr = {}, on_notify = on_notify }, Conn)
  local ok, job = pcall(vim.fn.jobstart, cmd, {
    on_stdout = function(_, data)
      self:_read(data)
    end,
    on_stderr = function(_, data)
      for _, l in ipairs(data) do
        if l ~= '' then
          table.insert(self.stderr, l)
          if #self.stderr > 20 then
            table.remove(self.stderr, 1)
          end
        end
      end
    end,
    on_exit = function(_, code)
      self.job = nil
      local cbs = self.callbacks
      self.callbacks = {}
      for _, cb in pairs(cbs) do
        xpcall(cb, report, { message = 'tackle bridge exited' })
      end
      if on_exit then
        on_exit(code, table.concat(self.stderr, '\n'))
      end
    end,
  })
  if not ok or job <= 0 then
    return nil, ('cannot start %s: %s'):format(table.concat(cmd, ' '), ok and 'not executable' or job)
  end
  self.job = job
  return self
end

function Conn:_read(data)
  data[1] = self.partial .. data[1]
  self.partial = table.remove(data)
  for _, line in ipairs(data) do
    if line ~= '' then
      self:_handle(line)
    end
  end
end

function Conn:_handle(line)
  local ok, msg = pcall(vim.json.decode, line, decode_opts)
  if not ok or type(msg) ~= 'table' then
    report('the bridge sent a line that is not JSON: ' .. line:sub(1, 200))
    return
  end
  if msg.method then
    xpcall(self.on_notify, report, msg.method, msg.params or {})
  elseif msg.id ~= nil then
    local cb = self.callbacks[msg.id]
    self.callbacks[msg.id] = nil
    if cb then
      xpcall(cb, report, msg.error, msg.result)
    elseif msg.error then
      report(M.error_text(msg.error))
    end
  end
end

--- Sends a request; cb(err, result) gets the answer (err is the JSON-RPC
--- error object, nil on success).
function Conn:request(method, params, cb)
  if not self.job then
    if cb then
      cb({ message = 'tackle bridge is not running' })
    end
    return
  end
  self.next_id = self.next_id + 1
  self.callbacks[self.next_id] = cb or function(err)
    if err then
      report(M.error_text(err))
    end
  end
  if params == nil or next(params) == nil then
    params = vim.empty_dict()
  end
  local line = vim.json.encode({ jsonrpc = '2.0', id = self.next_id, method = method, params = params })
  vim.fn.chansend(self.job, line .. '\n')
end

function Conn:stop()
  if self.job then
    vim.fn.jobstop(self.job)
  end
end

--- error_text renders a JSON-RPC error for people: "message (NotFound)".
function M.error_text(err)
  local code = type(err.data) == 'table' and err.data.grpcCode
  return (err.message or 'error') .. (code and (' (' .. code .. ')') or '')
end

return M
