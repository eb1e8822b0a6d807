-- :CortexHistory, :CortexBlast, :CortexRelated, :CortexRelatedChanges, :CortexContext,
-- :CortexSearch, :CortexNote and the client side of the server command `cortex.showHistory` (the
-- command of a code lens).
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

-- what changes with it -------------------------------------------------------------------------

local function shared_text(n)
  n = math.floor(tonumber(n) or 0)
  if n <= 0 then return "no shared commit" end
  if n == 1 then return "1 shared commit (weak)" end
  return n .. " shared commits"
end

--- Quickfix items for a cortex/related result, with a target or for the working tree's changes:
--- symbols (at their first line) then files, "name · N shared commits · relation · with the
--- changed files it came with — last together: subject date".
function M.related_items(result, client)
  local root = util.repo_root(result, client)
  local items = {}
  local function add(p)
    if type(p) ~= "table" or type(p.path) ~= "string" or p.path == "" then return end
    local name = util.is_nil(p.qualname) and p.path or (p.path .. "::" .. tostring(p.qualname))
    local parts = { util.oneline(name), shared_text(p.support) }
    if not util.is_nil(p.relation) then table.insert(parts, util.oneline(p.relation)) end
    if type(p.with_changed) == "table" and #p.with_changed > 0 then
      local mates = {}
      for i, w in ipairs(p.with_changed) do
        if i > 5 then table.insert(mates, "…"); break end
        table.insert(mates, util.oneline(w))
      end
      table.insert(parts, "with " .. table.concat(mates, ", "))
    end
    local text = table.concat(parts, " · ")
    local newest = type(p.evidence) == "table" and p.evidence[1] or nil
    if type(newest) == "table" and not util.is_nil(newest.subject) then
      text = text .. " — last together: " .. util.oneline(newest.subject)
      if not util.is_nil(newest.time) then text = text .. " " .. date(newest.time) end
    end
    local line = tonumber(p.line)
    table.insert(items, {
      filename = util.join(root, p.path),
      lnum = (line and line >= 1) and math.floor(line) or 1,
      col = 1,
      text = text,
    })
  end
  for _, p in ipairs(type(result.symbols) == "table" and result.symbols or {}) do add(p) end
  for _, p in ipairs(type(result.files) == "table" and result.files or {}) do add(p) end
  return items
end

local function related_title(result, changes)
  if changes then   -- new files (`unknown`: no history yet) are changed files too
    local n = (type(result.changed) == "table" and #result.changed or 0)
      + (type(result.unknown) == "table" and #result.unknown or 0)
    return string.format("Cortex related: what usually changes with your %d changed file%s", n,
      n == 1 and "" or "s")
  end
  local t = type(result.target) == "table" and result.target or {}
  local name = util.is_nil(t.qualname) and tostring(t.path or "?")
    or (tostring(t.path) .. "::" .. tostring(t.qualname))
  return "Cortex related: what changes with " .. util.oneline(name)
end

local function related(changes)
  local bufnr = vim.api.nvim_get_current_buf()
  local client = need_client(bufnr)
  if not client then return end
  -- The working tree's question sends no position: the server reads `git status` and the
  -- unsaved buffers it was sent.
  local params = changes and { uri = vim.uri_from_bufnr(bufnr) } or util.position_params(client)
  util.request(client, "cortex/related", params, function(err, result)
    if err then return on_error("related", err) end
    M.last.related = result
    local items = M.related_items(result, client)
    local title = related_title(result, changes)
    if result.partial then title = title .. " (partial index)" end
    util.set_qf(title, items)
    if #items > 0 then return end
    if not util.is_nil(result.note) then
      util.notify(util.oneline(result.note))
    elseif changes and (type(result.changed) ~= "table" or #result.changed == 0)
        and (type(result.unknown) ~= "table" or #result.unknown == 0) then
      util.notify("no uncommitted changes in this repository")
    else
      util.notify(changes and "nothing in the history usually changes with your changes"
        or "nothing in the history changes with this")
    end
  end, bufnr)
end

--- :CortexRelated: what changes with the symbol (or file) under the cursor.
function M.related() related(false) end

--- :CortexRelatedChanges: what usually changes with the working tree's uncommitted changes
--- (unsaved buffers included) and is not changed yet.
function M.related_changes() related(true) end

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
  cmd("CortexRelated", M.related, { desc = "Cortex: what changes with the symbol under the cursor (quickfix)" })
  cmd("CortexRelatedChanges", M.related_changes,
    { desc = "Cortex: what usually changes with the uncommitted changes (quickfix)" })
  cmd("CortexContext", M.context, { nargs = "?", desc = "Cortex: context pack of the symbol into the + register" })
  cmd("CortexSearch", M.search, { nargs = "+", desc = "Cortex: search commits, docs and notes (quickfix)" })
  cmd("CortexNote", M.note, { nargs = "+", desc = "Cortex: add a note on the symbol under the cursor" })
end

return M
