#!/usr/bin/env bash
# npm test: set everything up, then typecheck, lint and run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash infra/scripts/setup.sh
bash infra/scripts/services.sh

printf '\n==> typecheck\n'
pnpm exec tsc -p tsconfig.json
printf '\n==> lint\n'
pnpm exec biome check .

printf '\n==> tests\n'
# Node 20 neither expands globs nor finds .ts files itself: list them.
mapfile -t files < <(find test -name '*.test.ts' -not -path '*/node_modules/*' | sort)
if [ "${#files[@]}" -eq 0 ]; then
  echo "no test files found" >&2
  exit 1
fi
node --import tsx --test --test-concurrency=1 --test-reporter=spec "${files[@]}"

printf '\n==> end-to-end and crash tests again, durable mode (quorum queues, persistent messages)\n'
# The first run used the default fast mode; every service started here reads GEMESH_DURABILITY.
mapfile -t meshFiles < <(find test/e2e test/integration -name '*.test.ts' | sort)
GEMESH_DURABILITY=durable node --import tsx --test --test-concurrency=1 --test-reporter=spec "${meshFiles[@]}"
