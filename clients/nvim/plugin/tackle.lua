-- tackle.nvim commands; everything loads on first use. See :help tackle.
if vim.g.loaded_tackle then
  return
end
vim.g.loaded_tackle = 1

local function tackle()
  return require('tackle')
end

local function command(name, fn, opts)
  opts = opts or {}
  vim.api.nvim_create_user_command(name, fn, opts)
end

command('TackleChat', function()
  tackle().chat()
end, { desc = "tackle: the chat of the project's session" })
command('TacklePrompt', function(o)
  tackle().prompt(o.args)
end, { nargs = '+', desc = 'tackle: send a prompt to the agent' })
command('TackleCancel', function()
  tackle().cancel()
end, { desc = 'tackle: cancel the running prompt' })
command('TackleAttach', function(o)
  tackle().attach_cmd(o.args)
end, {
  nargs = '?',
  desc = 'tackle: attach to a session',
  complete = function()
    return tackle().state.session_ids
  end,
})
command('TackleSessions', function()
  tackle().sessions()
end, { desc = 'tackle: pick a session' })
command('TackleTools', function()
  tackle().tools()
end, { desc = "tackle: the session's tools" })
command('TackleRun', function(o)
  tackle().run_cmd(o.args)
end, {
  nargs = '+',
  desc = 'tackle: run a tool call ({tool} {json})',
  complete = function(lead, line)
    if line:match('^%s*%S+%s+%S*$') then
      return vim.tbl_filter(function(n)
        return vim.startswith(n, lead)
      end, tackle().state.tool_names)
    end
    return {}
  end,
})
command('TackleMcp', function()
  tackle().mcp()
end, { desc = "tackle: the session's MCP servers" })
command('TacklePermissions', function()
  tackle().ask_permissions()
end, { desc = 'tackle: answer the waiting permission requests' })

vim.api.nvim_create_autocmd('VimLeavePre', {
  group = vim.api.nvim_create_augroup('tackle', { clear = true }),
  callback = function()
    if package.loaded['tackle'] then
      require('tackle').stop()
    end
  end,
})
