-- Cortex for Neovim: starts cortex-ls for buffers inside git repositories, shows its code lenses,
-- and adds :CortexHistory, :CortexBlast, :CortexRelated, :CortexRelatedChanges, :CortexContext,
-- :CortexSearch and :CortexNote.
--
--   require("cortex").setup({ cmd = { "cortex-ls" }, settings = { hotspotThreshold = 4 } })
--
-- Neovim 0.11+: vim.lsp.config("cortex_ls", …) + vim.lsp.enable("cortex_ls").
-- Neovim 0.10:  vim.lsp.start(…) from a FileType autocmd, root = the git root.
local config = require("cortex.config")
local util = require("cortex.util")
local codelens = require("cortex.codelens")
local commands = require("cortex.commands")

local M = {}

--- Runtime state, per client id: what the server reported (for :checkhealth, scripts, tests).
M.state = {
  index_updates = {},   -- client id -> number of cortex/indexUpdated received
  last_update = {},     -- client id -> params of the last cortex/indexUpdated
  index_status = {},    -- client id -> params of the last cortex/indexStatus
  last_buf = nil,       -- the last file buffer entered (for :checkhealth)
}

M.last = commands.last

local group = vim.api.nvim_create_augroup("cortex", { clear = true })

local function settings_or_empty(settings)
  if settings == nil or vim.tbl_isempty(settings) then return vim.empty_dict() end
  return settings
end

local handlers = {
  ["cortex/indexUpdated"] = function(_, params, ctx)
    local id = ctx.client_id
    M.state.index_updates[id] = (M.state.index_updates[id] or 0) + 1
    M.state.last_update[id] = params
    -- Neovim ≤ 0.11 does not support workspace/codeLens/refresh: refresh the lenses here.
    codelens.refresh_client(vim.lsp.get_client_by_id(id))
    vim.api.nvim_exec_autocmds("User", { pattern = "CortexIndexUpdated", data = { client_id = id, params = params } })
  end,
  ["cortex/indexStatus"] = function(_, params, ctx)
    M.state.index_status[ctx.client_id] = params
    vim.api.nvim_exec_autocmds("User", { pattern = "CortexIndexStatus", data = { client_id = ctx.client_id, params = params } })
  end,
}

local function on_attach(client, bufnr)
  codelens.attach(client, bufnr)
  if config.options.on_attach then config.options.on_attach(client, bufnr) end
end

local function capabilities()
  local caps = vim.lsp.protocol.make_client_capabilities()
  if config.options.capabilities then
    caps = vim.tbl_deep_extend("force", caps, config.options.capabilities)
  end
  return caps
end

local function wants(bufnr)
  local fts = config.options.filetypes
  if fts and not vim.tbl_contains(fts, vim.bo[bufnr].filetype) then return false end
  return util.git_root(bufnr) ~= nil
end

--- The lsp config table (shared by both start paths).
local function lsp_config()
  local o = config.options
  local settings = settings_or_empty(o.settings)
  return {
    name = config.name,
    cmd = o.cmd,
    cmd_env = o.cmd_env,
    init_options = settings,
    settings = { cortex = settings },
    handlers = handlers,
    capabilities = capabilities(),
    on_attach = on_attach,
  }
end

local function setup_011()
  local cfg = lsp_config()
  cfg.name = nil
  cfg.filetypes = config.options.filetypes
  cfg.root_dir = function(bufnr, on_dir)
    if wants(bufnr) then on_dir(util.git_root(bufnr)) end
  end
  vim.lsp.config(config.name, cfg)
  vim.lsp.enable(config.name)
  -- vim.lsp.enable attaches on FileType; buffers with no filetype get no FileType event.
  if not config.options.filetypes then
    vim.api.nvim_create_autocmd("BufReadPost", {
      group = group,
      callback = function(ev)
        if vim.bo[ev.buf].filetype == "" and wants(ev.buf) then M.start(ev.buf) end
      end,
    })
  end
end

--- Start (or reuse) a client for a buffer explicitly: vim.lsp.start with root = the git root.
function M.start(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  if not wants(bufnr) then return nil end
  local cfg = lsp_config()
  cfg.root_dir = util.git_root(bufnr)
  cfg.workspace_folders = { { uri = vim.uri_from_fname(cfg.root_dir), name = cfg.root_dir } }
  return vim.lsp.start(cfg, { bufnr = bufnr })
end

local function setup_010()
  vim.api.nvim_create_autocmd({ "FileType", "BufReadPost" }, {
    group = group,
    callback = function(ev)
      if ev.event == "BufReadPost" and vim.bo[ev.buf].filetype ~= "" then return end
      M.start(ev.buf)
    end,
  })
  -- buffers already open when setup() runs
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) then M.start(b) end
  end
end

function M.setup(opts)
  config.set(opts)
  vim.api.nvim_clear_autocmds({ group = group })
  commands.register_lsp_commands()
  if config.options.commands then commands.create_user_commands() end
  vim.api.nvim_create_autocmd("BufEnter", {
    group = group,
    callback = function(ev)
      if vim.bo[ev.buf].buftype == "" and vim.api.nvim_buf_get_name(ev.buf) ~= "" then M.state.last_buf = ev.buf end
    end,
  })
  vim.api.nvim_create_autocmd("LspDetach", {
    group = group,
    callback = function(ev)
      local client = vim.lsp.get_client_by_id(ev.data.client_id)
      if client and client.name == config.name then codelens.detach(ev.buf) end
    end,
  })
  if util.has_011 and vim.lsp.config and vim.lsp.enable then
    setup_011()
  else
    setup_010()
  end
  return M
end

--- The Cortex client of a buffer (nil if none).
function M.client(bufnr) return util.client(bufnr) end

M.refresh_codelens = codelens.refresh
M.history = commands.history
M.blast = commands.blast
M.related = commands.related
M.related_changes = commands.related_changes
M.context = commands.context
M.search = commands.search
M.note = commands.note

return M
