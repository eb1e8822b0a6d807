-- :CortexHistory, :CortexBlast, :CortexContext, :CortexSearch, :CortexNote and the client side of
-- the server command `cortex.showHistory` (the command of a code lens).
-- Everything from the repository (subjects, authors, paths, notes) is untrusted plain text: it is
-- only ever put into quickfix text, registers and messages, never executed.
local util = require("cortex.util")

local M = {}

--- The last result of each command (for scripts and tests).
M.last = {}

local function need_client(bufnr)
  local client = util.client(bufnr)
  if not client then
    util.notify("no cortex-ls client attached to this buffer (see :checkhealth cortex)", vim.log.levels.WARN)
  end
  return client
end

local function on_error(what, err)
  util.notify(what .. " failed: " .. util.error_message(err), vim.log.levels.ERROR)
end

local function date(t)
  if util.is_nil(t) then return "" end
  return os.date("%Y-%m-%d", math.floor(tonumber(t) or 0))
end

-- history ---------------------------------------------------------------------------------------

--- Quickfix items for a cortex/symbolHistory (or cortex.showHistory) result: one per commit,
--- "short sha date author: subject", at the symbol in the file.
function M.history_items(result, client)
  local root = util.repo_root(result, client)
  local target = type(result.target) == "table" and result.target or {}
  local items = {}
  for _, entry in ipairs(result.entries or {}) do
    local c = entry.commit or {}
    local short = (not util.is_nil(c.short) and c.short) or (type(c.sha) == "string" and c.sha:sub(1, 10)) or "?"
    local path = (not util.is_nil(target.path) and target.path) or entry.path
    local lnum = tonumber(target.start_line) or 1
    table.insert(items, {
      filename = util.join(root, path),
      lnum = lnum,
      col = 1,
      text = string.format("%s %s %s: %s", util.oneline(short), date(c.time), util.oneline(c.author),
        util.oneline(c.subject)),
      user_data = { sha = c.sha, url = c.url },
    })
  end
  return items
end

local function history_title(result)
  local t = type(result.target) == "table" and result.target or {}
  local name = (not util.is_nil(t.qualname) and t.qualname) or t.path or "?"
  local title = "Cortex history: " .. util.oneline(name)
  if tonumber(result.total) and result.total > #(result.entries or {}) then
    title = title .. string.format(" (%d of %d)", #(result.entries or {}), result.total)
  end
  if result.partial then title = title .. " (partial index)" end
  return title
end

local function show_history(result, client)
  M.last.history = result
  local items = M.history_items(result, client)
  util.set_qf(history_title(result), items)
  if #items == 0 then util.notify("no commits yet for this symbol") end
end

function M.history(opts)
  local bufnr = vim.api.nvim_get_current_buf()
  local client = need_client(bufnr)
  if not client then return end
  local params = util.position_params(client)
  params.limit = tonumber(opts and opts.args) or 0
  util.request(client, "cortex/symbolHistory", params, function(err, result)
    if err then return on_error("history", err) end
    show_history(result, client)
  end, bufnr)
end

--- Handler of the lens command: vim.lsp.commands["cortex.showHistory"](command, ctx).
function M.show_history_command(command, ctx)
  local client = ctx and ctx.client_id and vim.lsp.get_client_by_id(ctx.client_id) or util.client(0)
  if not client then return end
  local arg = (command.arguments or {})[1] or vim.empty_dict()
  util.execute(client, "cortex.showHistory", arg, function(err, result)
    if err then return on_error("history", err) end
    show_history(result, client)
  end, ctx and ctx.bufnr or 0)
end

-- blast radius ----------------------------------------------------------------------------------

function M.blast_items(result, client)
  local root = util.repo_root(result, client)
  local items = {}
  for _, d in ipairs(result.dependents or {}) do
    local first = type(d.chain) == "table" and d.chain[1] or nil
    local line = first and tonumber(first.line) or 1
    table.insert(items, {
      filename = util.join(root, d.path),
      lnum = math.max(line, 1),
      col = 1,
      text = string.format("%s %s (depth %s, %d%%)", util.oneline(d.relation),
        util.oneline(d.label or d.qualname or d.path), tostring(d.depth),
        math.floor((tonumber(d.confidence) or 0) * 100 + 0.5)),
    })
  end
  for _, h in ipairs(result.hidden or {}) do
    table.insert(items, {
      filename = util.join(root, h.path),
      lnum = 1,
      col = 1,
      text = string.format("co-change %s (%s commits, %d%%)", util.oneline(h.path),
        tostring(h.support), math.floor((tonumber(h.confidence) or 0) * 100 + 0.5)),
    })
  end
  return items
end

function M.blast(opts)
  local bufnr = vim.api.nvim_get_current_buf()
  local client = need_client(bufnr)
  if not client then return end
  local params = util.position_params(client)
  local depth = tonumber(opts and opts.args)
  if depth then params.depth = depth end
  util.request(client, "cortex/blastRadius", params, function(err, result)
    if err then return on_error("blast radius", err) end
    M.last.blast = result
    local items = M.blast_items(result, client)
    local s = type(result.summary) == "table" and result.summary or {}
    local title = string.format("Cortex blast radius: %d dependents, risk %s", #(result.dependents or {}),
      util.oneline(s.risk or "?"))
    util.set_qf(title, items)
    if #items == 0 then util.notify("no dependents found") end
  end, bufnr)
end

-- context pack ----------------------------------------------------------------------------------

function M.context(opts)
  local bufnr = vim.api.nvim_get_current_buf()
  local client = need_client(bufnr)
  if not client then return end
  local arg = util.position_params(client)
  local budget = tonumber(opts and opts.args)
  if budget then arg.budget = budget end
  util.execute(client, "cortex.exportContext", arg, function(err, result)
    if err then return on_error("context pack", err) end
    M.last.context = result
    local text = type(result.text) == "string" and result.text or ""
    vim.fn.setreg('"', text)
    local where = '"'
    if vim.fn.has("clipboard") == 1 then
      if pcall(vim.fn.setreg, "+", text) then where = "+" end
    end
    util.notify(string.format("context pack copied to %s: %s tokens (budget %s)%s", where,
      tostring(result.tokens), tostring(result.budget), result.partial and ", partial index" or ""))
  end, bufnr)
end

-- search ----------------------------------------------------------------------------------------

function M.search_items(result, client)
  local root = util.repo_root(result, client)
  local items = {}
  for _, h in ipairs(result.hits or {}) do
    local path = not util.is_nil(h.path) and h.path or nil
    local text = string.format("[%s] %s", util.oneline(h.kind), util.oneline(h.title))
    if not util.is_nil(h.time) then text = text .. " · " .. date(h.time) end
    local item = { text = text, user_data = { sha = h.sha, citation = h.citation } }
    if path then
      item.filename = util.join(root, path)
      item.lnum = tonumber(h.line) or 1
      item.col = 1
    elseif type(h.files) == "table" and type(h.files[1]) == "string" then
      item.filename = util.join(root, h.files[1])
      item.lnum = 1
    end
    table.insert(items, item)
  end
  return items
end

function M.search(opts)
  local query = opts and opts.args or ""
  if query == "" then return util.notify("usage: :CortexSearch {query}", vim.log.levels.WARN) end
  local bufnr = vim.api.nvim_get_current_buf()
  local client = need_client(bufnr)
  if not client then return end
  local params = { query = query, uri = vim.uri_from_bufnr(bufnr) }
  util.request(client, "cortex/search", params, function(err, result)
    if err then return on_error("search", err) end
    M.last.search = result
    local items = M.search_items(result, client)
    util.set_qf("Cortex search: " .. util.oneline(query), items)
    local note = util.is_nil(result.note) and "" or util.oneline(result.note)
    if #items == 0 then
      util.notify("nothing found" .. (note == "" and "" or (" (" .. note .. ")")))
    elseif note ~= "" then
      -- The hits' caveat (the vectors' guesses, common words only) must be seen with them.
      util.notify(string.format("%d hits: %s", #items, note))
    end
  end, bufnr)
end

-- notes -----------------------------------------------------------------------------------------

function M.note(opts)
  local text = opts and opts.args or ""
  if text == "" then return util.notify("usage: :CortexNote {text}", vim.log.levels.WARN) end
  local bufnr = vim.api.nvim_get_current_buf()
  local client = need_client(bufnr)
  if not client then return end
  local arg = util.position_params(client)
  arg.text = text
  util.execute(client, "cortex.addNote", arg, function(err, result)
    if err then return on_error("note", err) end
    M.last.note = result
    util.notify(string.format("note #%s added on %s", tostring(result.id), util.oneline(result.target)))
  end, bufnr)
end

-- registration ----------------------------------------------------------------------------------

function M.register_lsp_commands()
  vim.lsp.commands["cortex.showHistory"] = M.show_history_command
end

function M.create_user_commands()
  local cmd = vim.api.nvim_create_user_command
  cmd("CortexHistory", M.history, { nargs = "?", desc = "Cortex: history of the symbol under the cursor (quickfix)" })
  cmd("CortexBlast", M.blast, { nargs = "?", desc = "Cortex: dependents of the symbol under the cursor (quickfix)" })
  cmd("CortexContext", M.context, { nargs = "?", desc = "Cortex: context pack of the symbol into the + register" })
  cmd("CortexSearch", M.search, { nargs = "+", desc = "Cortex: search commits, docs and notes (quickfix)" })
  cmd("CortexNote", M.note, { nargs = "+", desc = "Cortex: add a note on the symbol under the cursor" })
end

return M
