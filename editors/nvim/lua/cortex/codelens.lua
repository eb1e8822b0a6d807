-- Code lenses: shown and refreshed on attach, BufEnter, InsertLeave and cortex/indexUpdated.
-- Neovim 0.12+ has vim.lsp.codelens.enable() (lenses follow the server's refresh requests);
-- 0.10/0.11 only have vim.lsp.codelens.refresh() and do not support workspace/codeLens/refresh,
-- so the server's cortex/indexUpdated notification triggers the refresh.
local config = require("cortex.config")
local util = require("cortex.util")

local M = {}

local group = vim.api.nvim_create_augroup("cortex_codelens", { clear = true })

local function has_enable()
  return type(vim.lsp.codelens.enable) == "function"
end

--- Ask the server for the lenses of a buffer again.
function M.refresh(bufnr)
  if not config.options.codelens then return end
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  if not vim.api.nvim_buf_is_valid(bufnr) or not util.client(bufnr) then return end
  if has_enable() then
    -- 0.12: re-enabling requests the lenses again.
    pcall(vim.lsp.codelens.enable, true, { bufnr = bufnr })
  else
    pcall(vim.lsp.codelens.refresh, { bufnr = bufnr })
  end
end

--- Refresh every buffer the client is attached to (on cortex/indexUpdated).
function M.refresh_client(client)
  if not client then return end
  local bufs = client.attached_buffers or {}
  for bufnr in pairs(bufs) do
    if vim.api.nvim_buf_is_loaded(bufnr) then M.refresh(bufnr) end
  end
end

function M.attach(client, bufnr)
  if not config.options.codelens then return end
  if has_enable() then
    vim.lsp.codelens.enable(true, { bufnr = bufnr })
  else
    M.refresh(bufnr)
  end
  vim.api.nvim_clear_autocmds({ group = group, buffer = bufnr })
  vim.api.nvim_create_autocmd({ "BufEnter", "InsertLeave" }, {
    group = group,
    buffer = bufnr,
    desc = "Cortex: refresh code lenses",
    callback = function(ev) M.refresh(ev.buf) end,
  })
end

function M.detach(bufnr)
  pcall(vim.api.nvim_clear_autocmds, { group = group, buffer = bufnr })
end

--- The lenses currently known for a buffer (resolved or not), for all clients.
function M.get(bufnr)
  return vim.lsp.codelens.get(bufnr or 0)
end

return M
