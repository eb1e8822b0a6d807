-- Cortex: nothing starts until require("cortex").setup() is called (lazy.nvim: `opts = {}`).
if vim.g.loaded_cortex then return end
vim.g.loaded_cortex = true
