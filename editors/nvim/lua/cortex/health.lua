-- :checkhealth cortex
local config = require("cortex.config")
local util = require("cortex.util")

local M = {}

local health = vim.health or require("health")
local start = health.start or health.report_start
local ok = health.ok or health.report_ok
local warn = health.warn or health.report_warn
local error = health.error or health.report_error
local info = health.info or health.report_info

function M.check()
  start("cortex: server")
  local cmd = config.options.cmd or {}
  local exe = cmd[1]
  if exe and vim.fn.executable(exe) == 1 then
    ok(string.format("`%s` found: %s", exe, vim.fn.exepath(exe)))
  else
    error(string.format("`%s` is not executable", tostring(exe)),
      { "pip install cortex-memory (it provides cortex-ls)", "or set cmd = { '/path/to/python', '-m', 'cortex_ls' } in setup()" })
  end

  start("cortex: Neovim")
  local v = vim.version()
  local version = string.format("%d.%d.%d%s", v.major, v.minor, v.patch, v.prerelease and ("-" .. tostring(v.prerelease)) or "")
  if vim.fn.has("nvim-0.11") == 1 then
    ok("Neovim " .. version .. ": vim.lsp.config/vim.lsp.enable")
  elseif vim.fn.has("nvim-0.10") == 1 then
    ok("Neovim " .. version .. ": vim.lsp.start (0.11+ recommended)")
  else
    error("Neovim " .. version .. " is too old: 0.10 or newer is needed")
  end
  if type(vim.lsp.codelens.enable) == "function" then
    info("code lenses: vim.lsp.codelens.enable()")
  else
    info("code lenses: vim.lsp.codelens.refresh() on attach, BufEnter, InsertLeave and cortex/indexUpdated")
  end

  start("cortex: current buffer")
  local bufnr = require("cortex").state.last_buf
  if not (bufnr and vim.api.nvim_buf_is_valid(bufnr)) then bufnr = vim.fn.bufnr("#") end
  if bufnr < 1 or not vim.api.nvim_buf_is_valid(bufnr) then
    warn("no file buffer to check")
    return
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  local root = util.git_root(bufnr)
  if root then
    ok(string.format("%s is in the git repository %s", name, root))
  else
    warn(string.format("%s is not inside a git repository: cortex-ls does not start for it", name ~= "" and name or "[No Name]"))
  end
  local client = util.client(bufnr)
  if client then
    ok(string.format("client %s (id %d) attached, root %s, position encoding %s", client.name, client.id,
      tostring(client.root_dir), tostring(client.offset_encoding)))
    local st = require("cortex").state.index_status[client.id]
    if st then
      info(string.format("index: %s %s", tostring(st.state), util.oneline(st.message)))
    end
  elseif root then
    local any = vim.lsp.get_clients({ name = config.name })
    warn("no cortex-ls client attached to this buffer" .. (#any > 0 and string.format(" (%d running elsewhere)", #any) or ""),
      { "did require('cortex').setup() run?", "check :lua =vim.lsp.get_log_path()" })
  end
end

return M
