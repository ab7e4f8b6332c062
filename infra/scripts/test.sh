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
# Unit and native tests start no services: two files at a time. The rest start meshes, brokers and
# fault proxies, and some time recoveries: one file at a time.
mapfile -t inProcess < <(find test/unit test/native -name '*.test.ts' | sort)
mapfile -t withServices < <(find test -name '*.test.ts' -not -path '*/node_modules/*' -not -path 'test/unit/*' \
  -not -path 'test/native/*' | sort)
if [ "${#inProcess[@]}" -eq 0 ] || [ "${#withServices[@]}" -eq 0 ]; then
  echo "no test files found" >&2
  exit 1
fi
node --import tsx --test --test-concurrency=2 --test-reporter=spec "${inProcess[@]}"
node --import tsx --test --test-concurrency=1 --test-reporter=spec "${withServices[@]}"

printf '\n==> the tests the queue mode changes, again in durable mode (quorum queues, persistent messages)\n'
# The first run used the default fast mode; every service started here reads GEMESH_DURABILITY.
# Again: answers through the whole mesh, crashes and redeliveries (batcher, worker, poison), a real
# broker restart, protocol versions, the AMQP ingress. The gateway's API, the fault proxy and
# Redis-only suites do not depend on the queue type and run once.
durableFiles=(
  test/e2e/mesh-accuracy.test.ts
  test/e2e/batcher-replicas.test.ts
  test/e2e/worker-scaling.test.ts
  test/e2e/dependency-restarts.test.ts
  test/e2e/protocol-version.test.ts
  test/e2e/large-requests.test.ts
  test/integration/amqp-ingress.test.ts
  test/integration/batch-formation.test.ts
)
GEMESH_DURABILITY=durable node --import tsx --test --test-concurrency=1 --test-reporter=spec "${durableFiles[@]}"
