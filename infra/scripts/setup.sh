#!/usr/bin/env bash
# Prepares a checkout to run: pnpm, dependencies, the native bridge (its Debian
# packages installed when root, else skipped with a line saying what to install;
# see native.sh) and the demo model repository. Idempotent and
# quick when everything is already in place.
set -euo pipefail
cd "$(dirname "$0")/../.."

step() { printf '\n==> %s\n' "$*"; }

# package.json's engines: 20.18 or newer.
if ! node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 18) ? 0 : 1)'; then
  echo "GE Mesh needs Node.js 20.18 or newer (found $(node --version))." >&2
  exit 1
fi

if ! command -v pnpm >/dev/null 2>&1; then
  step "installing pnpm 10"
  # pnpm 11 needs Node 22; 10.x runs on Node 20.
  npm install -g --allow-scripts=pnpm pnpm@10.34.9
fi

step "installing dependencies (pnpm $(pnpm --version))"
if [ -n "${CI:-}" ]; then
  pnpm install --frozen-lockfile --reporter=append-only
else
  pnpm install --frozen-lockfile
fi

bash infra/scripts/native.sh

step "generating the demo model repository"
node --import tsx packages/demo-models/src/cli.ts --out infra/model_repository
