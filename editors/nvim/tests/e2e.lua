-- Headless end-to-end run of the Cortex plugin against a real cortex-ls (driven by
-- tests/test_nvim.py):
--   E2E_PLUGIN=editors/nvim E2E_PYTHON=python E2E_OUT=out.json E2E_LINE=3 \
--     nvim --headless --clean -u editors/nvim/tests/e2e.lua repo/pkg/core.py
-- Writes what it saw as JSON to $E2E_OUT and exits 0, or 1 on the first failed step.
local results = { steps = {}, messages = {} }
local deadline_ms = tonumber(os.getenv("E2E_DEADLINE_MS") or "") or 25000
local finished = false

local function finish(ok, err)
  if finished then return end
  finished = true
  results.ok, results.err = ok, err
  local f = assert(io.open(os.getenv("E2E_OUT"), "w"))
  f:write(vim.json.encode(results))
  f:close()
  for _, c in ipairs(vim.lsp.get_clients()) do c:stop(true) end
  vim.cmd(ok and "qall!" or "cquit! 1")
end

vim.defer_fn(function() finish(false, "deadline: " .. vim.inspect(results.steps)) end, deadline_ms)

vim.opt.rtp:prepend(os.getenv("E2E_PLUGIN"))
vim.opt.swapfile = false

-- record what the plugin tells the user
local notify = vim.notify
vim.notify = function(msg, level, opts)
  table.insert(results.messages, msg)
  return notify(msg, level, opts)
end

local cortex = require("cortex")
cortex.setup({
  cmd = { os.getenv("E2E_PYTHON"), "-P", "-m", "cortex_ls" },
  cmd_env = { CORTEX_MODEL = "none" },
  settings = { hotspotThreshold = 2, historyLength = 3 },
  on_attach = function(client, bufnr) results.on_attach = { client.name, bufnr } end,
})

local function wait(ms, what, cond)
  local t0 = vim.uv.hrtime()
  local ok = vim.wait(ms, cond, 20)
  table.insert(results.steps, { what = what, ms = math.floor((vim.uv.hrtime() - t0) / 1e6), ok = ok })
  assert(ok, "timed out waiting for " .. what)
end

local function qf_after(cmd, title_prefix)
  vim.fn.setqflist({}, "f")
  vim.fn.setqflist({}, " ", { title = "" })
  vim.cmd(cmd)
  wait(5000, cmd, function()
    return vim.fn.getqflist({ title = 0 }).title:sub(1, #title_prefix) == title_prefix
  end)
  local info = vim.fn.getqflist({ title = 0, items = 0 })
  local items = {}
  for _, it in ipairs(info.items) do
    table.insert(items, { file = it.bufnr > 0 and vim.api.nvim_buf_get_name(it.bufnr) or "", lnum = it.lnum, text = it.text })
  end
  vim.cmd("cclose")
  return { title = info.title, items = items }
end

local function run()
  results.version = tostring(vim.version())
  local bufnr = vim.api.nvim_get_current_buf()
  results.filetype = vim.bo[bufnr].filetype
  local line = tonumber(os.getenv("E2E_LINE"))

  wait(10000, "client attached", function() return cortex.client(bufnr) ~= nil end)
  local client = cortex.client(bufnr)
  results.offset_encoding = client.offset_encoding
  results.root_dir = client.root_dir
  wait(15000, "cortex/indexUpdated", function() return (cortex.state.index_updates[client.id] or 0) >= 1 end)
  results.index_updated = cortex.state.last_update[client.id]

  -- hover on `def compute`
  vim.api.nvim_win_set_cursor(0, { line + 1, 5 })
  local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
  local r = client:request_sync("textDocument/hover", params, 5000, bufnr)
  assert(r and not r.err and r.result, "hover: " .. vim.inspect(r))
  results.hover = r.result.contents.value

  -- code lens on the hot function, resolved (0.11: refreshed on cortex/indexUpdated)
  local lens
  wait(5000, "code lens on the hot function", function()
    for _, l in ipairs(vim.lsp.codelens.get(bufnr)) do
      if l.range.start.line == line and l.command and l.command.title ~= "" then lens = l; return true end
    end
    return false
  end)
  results.lens = { title = lens.command.title, command = lens.command.command, line = lens.range.start.line }
  results.lens_count = #vim.lsp.codelens.get(bufnr)

  -- running the lens: cortex.showHistory handled on the client side -> quickfix
  vim.api.nvim_win_set_cursor(0, { line + 1, 0 })
  vim.fn.setqflist({}, "f")
  vim.lsp.codelens.run()
  wait(5000, "lens command cortex.showHistory", function()
    return vim.fn.getqflist({ title = 0 }).title:find("^Cortex history") ~= nil
  end)
  results.lens_run = { title = vim.fn.getqflist({ title = 0 }).title, count = #vim.fn.getqflist() }
  vim.cmd("cclose")

  vim.api.nvim_win_set_cursor(0, { line + 1, 5 })
  results.history = qf_after("CortexHistory", "Cortex history")
  results.blast = qf_after("CortexBlast", "Cortex blast radius")
  results.related = qf_after("CortexRelated", "Cortex related")
  -- an unsaved edit of the function: what usually changes with the working tree's changes
  local before = vim.api.nvim_buf_get_lines(bufnr, line + 1, line + 2, false)
  vim.api.nvim_buf_set_lines(bufnr, line + 1, line + 2, false, { before[1] .. "  # edited" })
  results.related_changes = qf_after("CortexRelatedChanges", "Cortex related")
  vim.api.nvim_buf_set_lines(bufnr, line + 1, line + 2, false, before)
  results.search = qf_after("CortexSearch engine compute values", "Cortex search")
  results.common = qf_after("CortexSearch the of and", "Cortex search")
  results.common.message = results.messages[#results.messages]

  vim.fn.setreg('"', "")
  vim.cmd("CortexContext 500")
  wait(5000, "CortexContext", function() return cortex.last.context ~= nil end)
  results.context = { register = vim.fn.getreg('"'), tokens = cortex.last.context.tokens,
    budget = cortex.last.context.budget, message = results.messages[#results.messages] }

  vim.cmd("CortexNote compute must stay pure")
  wait(5000, "CortexNote", function() return cortex.last.note ~= nil end)
  results.note = { text = cortex.last.note.text, target = cortex.last.note.target,
    message = results.messages[#results.messages] }

  vim.cmd("checkhealth cortex")
  results.health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
end

vim.api.nvim_create_autocmd("VimEnter", {
  once = true,
  callback = function()
    local ok, err = xpcall(run, debug.traceback)
    finish(ok, err)
  end,
})
