#!/usr/bin/env bash
# Build the Cortex VS Code extension: install from the lockfile, type-check, unit-test, bundle, package.
# Output: editors/vscode/cortex.vsix
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
npm ci --no-audit --no-fund
npx tsc --noEmit -p .
npm test
npx esbuild src/extension.ts --bundle --platform=node --format=cjs --target=node20 \
  --external:vscode --outfile=dist/extension.js --minify
npx vsce package --no-dependencies -o cortex.vsix < /dev/null
echo "package.sh: cortex.vsix built in $(( $(date +%s) - t0 )) s"
