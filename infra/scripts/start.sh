#!/usr/bin/env bash
# npm start: set everything up, then run gateway, batcher and one CPU worker.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash infra/scripts/setup.sh
if [ -z "${GEMESH_RABBITMQ_URL:-}${GEMESH_REDIS_URL:-}" ]; then bash infra/scripts/services.sh; fi
printf '\n==> starting GE Mesh\n'
exec node --import tsx packages/launcher/src/cli.ts "$@"
