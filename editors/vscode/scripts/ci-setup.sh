#!/usr/bin/env bash
# Installs what the VS Code e2e test (tests/test_vscode_e2e.py) needs:
#   system packages (chromium, ripgrep, libkrb5-dev) via apt-get (needs root),
#   the extension's npm dependencies (npm ci) and the packaged cortex.vsix,
#   code-server 4.100.3 and playwright-core under editors/vscode/.e2e/ (a cache; reused when present).
# Usage: bash editors/vscode/scripts/ci-setup.sh   then   CORTEX_E2E_VSCODE=1 python -m pytest -m vscode
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
cache="${CORTEX_E2E_CACHE:-$here/.e2e}"
t0=$(date +%s)

need_apt=()
command -v chromium >/dev/null || need_apt+=(chromium)
command -v rg >/dev/null || need_apt+=(ripgrep)
dpkg -s libkrb5-dev >/dev/null 2>&1 || need_apt+=(libkrb5-dev)
if [ ${#need_apt[@]} -gt 0 ]; then
  sudo_=""; [ "$(id -u)" = 0 ] || sudo_="sudo"
  $sudo_ apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq "${need_apt[@]}"
fi
echo "ci-setup: apt done in $(( $(date +%s) - t0 )) s"

# code-server + playwright-core (skipped when the cache already holds them)
mkdir -p "$cache"
if [ ! -x "$cache/node_modules/.bin/code-server" ] || [ ! -e "$cache/.code-server-ok" ]; then
  (
    cd "$cache"
    [ -f package.json ] || echo '{"name": "cortex-vscode-e2e", "private": true}' > package.json
    npm install --no-audit --no-fund --ignore-scripts code-server@4.100.3 playwright-core@1.65.1
    npm_config_yes=true npm rebuild argon2
    cd node_modules/code-server/lib/vscode
    npm install --no-audit --no-fund --omit=dev --ignore-scripts
    mkdir -p node_modules/@vscode/ripgrep/bin && cp "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg
    npm_config_yes=true npm rebuild
    ln -sfn node_modules node_modules.asar
    (cd bin/remote-cli && ln -sfn code-linux.sh code-server)
    (cd bin/helpers && ln -sfn browser-linux.sh browser.sh)
    cd extensions && npm install --no-audit --no-fund --omit=dev
  )
  touch "$cache/.code-server-ok"
fi
echo "ci-setup: code-server ready after $(( $(date +%s) - t0 )) s"

# the extension itself (CORTEX_SKIP_PACKAGE=1: already built by the caller)
[ "${CORTEX_SKIP_PACKAGE:-0}" = 1 ] || bash "$here/scripts/package.sh"
echo "ci-setup: done in $(( $(date +%s) - t0 )) s"
