-- Small helpers shared by the Cortex modules; they work on Neovim 0.10, 0.11 and 0.12.
local config = require("cortex.config")

local M = {}

M.has_011 = vim.fn.has("nvim-0.11") == 1

--- Git root of a buffer (or nil): the folder holding `.git` (a dir, or a file for worktrees).
function M.git_root(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  if not vim.api.nvim_buf_is_valid(bufnr) or vim.bo[bufnr].buftype ~= "" then return nil end
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == "" or name:match("^%a[%w+.-]*://") then return nil end
  return vim.fs.root(name, ".git")
end

--- The Cortex client attached to a buffer (or any running one as a fallback).
function M.client(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local clients = vim.lsp.get_clients({ bufnr = bufnr, name = config.name })
  return clients[1]
end

function M.notify(msg, level)
  vim.notify("Cortex: " .. msg, level or vim.log.levels.INFO)
end

--- client:request on 0.11+, client.request on 0.10.
function M.request(client, method, params, handler, bufnr)
  if M.has_011 then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

--- workspace/executeCommand sent to the server (no local command lookup).
function M.execute(client, command, argument, handler, bufnr)
  local params = { command = command, arguments = argument ~= nil and { argument } or nil }
  return M.request(client, "workspace/executeCommand", params, handler, bufnr)
end

--- Position params (textDocument + position) in the client's offset encoding.
function M.position_params(client, win)
  return vim.lsp.util.make_position_params(win or 0, client.offset_encoding)
end

--- The repository root an answer is about.
function M.repo_root(result, client)
  return (type(result) == "table" and result.repository) or (client and client.root_dir) or vim.fn.getcwd()
end

function M.join(root, path)
  if path == nil or path == "" then return nil end
  if path:sub(1, 1) == "/" then return path end
  return root .. "/" .. path
end

--- One line of untrusted text: no control characters, no newlines.
function M.oneline(s)
  if s == nil or s == vim.NIL then return "" end
  return (tostring(s):gsub("[%c]+", " "))
end

function M.is_nil(v) return v == nil or v == vim.NIL end

--- Fill and open the quickfix list.
function M.set_qf(title, items, open)
  vim.fn.setqflist({}, " ", { title = title, items = items })
  if open ~= false and #items > 0 then vim.cmd("botright copen") end
end

function M.error_message(err)
  if type(err) == "table" then return err.message or vim.inspect(err) end
  return tostring(err)
end

return M
