-- Configuration of the Cortex Neovim plugin: defaults, and the merged options of setup().
local M = {}

M.name = "cortex_ls"

M.defaults = {
  -- argv of the language server (stdio).
  cmd = { "cortex-ls" },
  -- extra environment for the server process (e.g. { CORTEX_MODEL = "none" }).
  cmd_env = nil,
  -- filetypes to attach to; nil: every buffer with a file inside a git repository.
  filetypes = nil,
  -- server settings (docs/protocol.md "Settings"), sent as initializationOptions and as
  -- the `cortex` section of workspace/configuration. Commit links are off: Neovim shows a
  -- hover's markdown links as text, and their long URLs would wrap every line.
  settings = { commitLinks = false },
  -- show code lenses and refresh them on attach, BufEnter, InsertLeave and cortex/indexUpdated.
  codelens = true,
  -- define :CortexHistory & co.
  commands = true,
  -- extra on_attach(client, bufnr).
  on_attach = nil,
  -- extra client capabilities, merged into vim.lsp.protocol.make_client_capabilities().
  capabilities = nil,
}

M.options = vim.deepcopy(M.defaults)

function M.set(opts)
  M.options = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts or {})
  -- lists replace, not merge
  if opts and opts.cmd then M.options.cmd = opts.cmd end
  if opts and opts.filetypes then M.options.filetypes = opts.filetypes end
  return M.options
end

return M
