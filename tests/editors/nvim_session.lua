-- A headless Neovim (0.7, Debian's) session against `mpkc lsp`, driven by tests/nvim.rs:
-- open the house linear, raise its stage count to 7 and wait for the over-budget diagnostic on
-- a region declaration, lower it back and wait for the diagnostics to clear, then hover the
-- task name and find the page map. Writes a log ending in `RESULT ok` or `RESULT fail` to
-- $MPKC_OUT and quits (exit status 1 on failure).
local mpkc, file, out = os.getenv('MPKC'), os.getenv('MPKC_FILE'), os.getenv('MPKC_OUT')
-- The shipped configuration (editors/nvim/mpkc.lua), as a user would load it.
local cfg = dofile(os.getenv('MPKC_EDITORS') .. '/nvim/mpkc.lua')
cfg.setup({ cmd = { mpkc, 'lsp' } })
local log = {}
local function say(s) table.insert(log, s) end
local function finish(ok)
  local f = io.open(out, 'w')
  f:write(table.concat(log, '\n') .. '\nRESULT ' .. (ok and 'ok' or 'fail') .. '\n')
  f:close()
  vim.cmd(ok and 'qa!' or 'cq!')
end

vim.cmd('edit ' .. file)
local buf = vim.api.nvim_get_current_buf()
if vim.bo[buf].filetype ~= 'mpk' then say('the filetype is not mpk'); finish(false) end
local client_id = cfg.client_id
if not client_id then say('the client did not start'); finish(false) end
if not vim.wait(10000, function() local c = vim.lsp.get_client_by_id(client_id); return c ~= nil and c.initialized end, 20) then
  say('the server did not initialize'); finish(false)
end

local function code_of(d) return d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code) end
local function wait_for(pred, what)
  if not vim.wait(15000, function() return pred(vim.diagnostic.get(buf)) end, 20) then
    say('timed out waiting for ' .. what); finish(false)
  end
end

local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
local stage_line, task_line
for i, l in ipairs(lines) do
  if l:match('^%s*stages 6%s*$') then stage_line = i end
  if l:match('^task ') then task_line = i end
end
if not stage_line then say('no `stages 6` line'); finish(false) end

vim.api.nvim_buf_set_lines(buf, stage_line - 1, stage_line, false, { (lines[stage_line]:gsub('stages 6', 'stages 7')) })
wait_for(function(ds) for _, d in ipairs(ds) do if code_of(d) == 'E0103' then return true end end return false end, 'E0103')
for _, d in ipairs(vim.diagnostic.get(buf)) do
  if code_of(d) == 'E0103' then
    local text = vim.api.nvim_buf_get_lines(buf, d.lnum, d.lnum + 1, false)[1]
    say('E0103 at line ' .. (d.lnum + 1) .. ': ' .. text)
    if not text:match('^%s*region ') then say('not on a region declaration'); finish(false) end
  end
end

vim.api.nvim_buf_set_lines(buf, stage_line - 1, stage_line, false, { lines[stage_line] })
wait_for(function(ds) return #ds == 0 end, 'the diagnostics to clear')
say('diagnostics cleared')

local params = { textDocument = { uri = vim.uri_from_bufnr(buf) }, position = { line = task_line - 1, character = 6 } }
local res = vim.lsp.buf_request_sync(buf, 'textDocument/hover', params, 10000)
local r = res and res[client_id]
local md = r and r.result and r.result.contents and r.result.contents.value
if not md then say('no hover'); finish(false) end
for l in md:gmatch('[^\n]+') do if l:find('page 13 |', 1, true) or l:find('of 14 |', 1, true) then say('hover: ' .. l) end end
if not md:find('page 13 |', 1, true) then say('the hover has no page map'); finish(false) end
finish(true)
