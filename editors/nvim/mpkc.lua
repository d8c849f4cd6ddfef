-- mpkc for Neovim (0.7 and later): the `mpk` filetype for *.mpk files and `mpkc lsp` attached
-- to every mpk buffer. Put this file on your runtimepath as lua/mpkc.lua and call
--
--   require('mpkc').setup()                 -- or setup({ cmd = { '/path/to/mpkc', 'lsp' } })
--
-- (or `dofile` it). Formatting: `:lua vim.lsp.buf.formatting_sync()` (0.7) or
-- `vim.lsp.buf.format()` (0.8+), which run `mpkc fmt`'s rules.
local M = {}

M.config = { cmd = { 'mpkc', 'lsp' } }

--- Starts the server once and attaches it to buffer `buf`; returns the client id.
function M.attach(buf)
  if not M.client_id or not vim.lsp.get_client_by_id(M.client_id) then
    local file = vim.api.nvim_buf_get_name(buf)
    M.client_id = vim.lsp.start_client({
      name = 'mpkc',
      cmd = M.config.cmd,
      root_dir = vim.fn.fnamemodify(file, ':p:h'),
    })
  end
  if M.client_id then
    vim.lsp.buf_attach_client(buf, M.client_id)
  end
  return M.client_id
end

--- Registers the filetype and the server; `opts.cmd` overrides the command.
function M.setup(opts)
  M.config = vim.tbl_extend('force', M.config, opts or {})
  local group = vim.api.nvim_create_augroup('mpkc', { clear = true })
  vim.api.nvim_create_autocmd({ 'BufRead', 'BufNewFile' }, {
    group = group,
    pattern = '*.mpk',
    callback = function(args)
      vim.bo[args.buf].commentstring = '// %s'
      vim.bo[args.buf].filetype = 'mpk'
    end,
  })
  vim.api.nvim_create_autocmd('FileType', {
    group = group,
    pattern = 'mpk',
    callback = function(args) M.attach(args.buf) end,
  })
end

return M
