-- :TackleChat with the fake model server: a prompt typed on the chat's
-- prompt line streams the answer, runs a tool and ends the turn;
-- :TackleCancel cancels a prompt that streams.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/helpers.lua')

if H.fakemodel == '' then
  io.stdout:write('SKIP chat_spec: no fake model server (scripts/nvim-test.sh builds internal/testpeers/fakemodelcmd)\n')
  vim.cmd('qall!')
  return
end

local dir = H.project('chat', { ['hello.txt'] = 'hello\n' })
local file = dir .. '/hello.txt'

local function text(s, chunk, delay_ms)
  return { Blocks = { { Type = 'text', Text = s } }, Chunk = chunk, Delay = delay_ms * 1000000 }
end
local long = string.rep('Once upon a time there was a daemon. ', 20)
local turns = {
  {
    Blocks = {
      { Type = 'text', Text = 'Let me read the file. ' },
      { Type = 'tool_use', Name = 'Read', Input = vim.json.encode({ file_path = file }) },
      {
        Type = 'tool_use',
        Name = 'TodoWrite',
        Input = vim.json.encode({
          todos = {
            { content = 'Read hello.txt', status = 'completed', activeForm = 'Reading hello.txt' },
            { content = 'Answer', status = 'in_progress', activeForm = 'Answering' },
          },
        }),
      },
    },
    Chunk = 4,
    Delay = 5000000,
  },
  text('The file says hello.', 4, 5),
  text(long, 2, 100),
}
H.write(H.dir .. '/turns.json', vim.json.encode(turns))

local url
local fake = { code = nil }
fake.id = vim.fn.jobstart({ H.fakemodel, '-script', H.dir .. '/turns.json', '-api-key', 'sk-test' }, {
  on_stdout = function(_, d)
    url = url or (d[1] ~= '' and d[1] or nil)
  end,
  on_stderr = function(_, d)
    for _, l in ipairs(d) do
      if l ~= '' then
        io.stdout:write('  fakemodel: ', l, '\n')
      end
    end
  end,
  on_exit = function(_, code)
    fake.code = code
  end,
})
H.wait(function()
  return url ~= nil
end, 'the fake model server')
-- The session gets nvim's environment, where the model is.
vim.env.ANTHROPIC_BASE_URL, vim.env.ANTHROPIC_API_KEY = url, 'sk-test'

-- What the chat showed after each event.
local seen = {}
vim.api.nvim_create_autocmd('User', {
  pattern = 'TackleUpdate',
  callback = function()
    table.insert(seen, { lines = require('tackle.chat').lines(), status = H.tackle.statusline() })
  end,
})

local function ever(pred)
  for _, s in ipairs(seen) do
    if pred(s) then
      return true
    end
  end
  return false
end

H.run({
  {
    'a prompt typed in the chat streams the answer and runs a tool',
    function()
      H.attached()
      H.eq('prompt', vim.bo.buftype, 'the chat is a prompt buffer')
      vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes('iwhat does hello.txt say?<CR>', true, false, true), 'xt', false)
      H.wait(function()
        return H.chat_has('── end_turn')
      end, 'the end of the prompt')
      local lines = require('tackle.chat').lines()
      local all = table.concat(lines, '\n')
      H.ok(all:find('> what does hello.txt say?', 1, true), 'the prompt once: ' .. all)
      local _, n = all:gsub('what does hello.txt say%?', '')
      H.eq(1, n, 'the prompt is shown once')
      H.ok(all:find('Let me read the file.', 1, true), 'the first answer')
      H.ok(all:find('● Read ' .. file, 1, true), 'the tool line')
      H.ok(all:find('⎿ Read ' .. file .. ': completed', 1, true), 'the tool result')
      H.ok(all:find('Todos:\n  [x] Read hello.txt\n  [~] Answering', 1, true), 'the todo list: ' .. all)
      H.ok(all:find('The file says hello.', 1, true), 'the final answer')
      H.ok(
        ever(function(s)
          for _, l in ipairs(s.lines) do
            if l:find('^Let me') and l ~= 'Let me read the file. ' and l ~= 'Let me read the file.' then
              return true
            end
          end
        end),
        'the answer streamed in pieces'
      )
      H.ok(
        ever(function(s)
          return s.status == 'tackle: running'
        end),
        'the statusline said running'
      )
      H.wait(function()
        return H.tackle.statusline() == 'tackle: idle'
      end, 'idle at the end')
    end,
  },
  {
    'TackleCancel cancels a streaming prompt',
    function()
      vim.cmd('TacklePrompt tell me a long story')
      H.wait(function()
        return H.chat_has('Once upon')
      end, 'the story to start')
      vim.cmd('TackleCancel')
      H.wait(function()
        return H.chat_has('── cancelled')
      end, 'the prompt to end as cancelled')
      H.ok(not H.chat_has(vim.trim(long)), 'the story did not finish')
      H.wait(function()
        return H.tackle.statusline() == 'tackle: idle'
      end, 'idle')
    end,
  },
  {
    'the fake model got only the planned requests',
    function()
      vim.fn.chanclose(fake.id, 'stdin')
      H.wait(function()
        return fake.code ~= nil
      end, 'the fake model server to end')
      H.eq(0, fake.code, 'fake model exit status')
    end,
  },
})
