#!/usr/bin/env bash
# NPU worker start: load the CANN environment mounted from the host, build the native
# bridge against that toolkit (the first start of the container only), then run the worker.
set -euo pipefail
toolkit="${ASCEND_TOOLKIT_HOME:-/usr/local/Ascend/ascend-toolkit/latest}"
if [ -f /usr/local/Ascend/ascend-toolkit/set_env.sh ]; then
  # set_env.sh reads unset variables.
  set +u
  # shellcheck disable=SC1091
  source /usr/local/Ascend/ascend-toolkit/set_env.sh
  set -u
fi
if [ ! -d "$toolkit" ]; then
  echo "no CANN toolkit at $toolkit: mount it from the host (docker-compose.ascend.yml) or set ASCEND_TOOLKIT_HOME" >&2
  exit 1
fi
export ASCEND_TOOLKIT_HOME="$toolkit"
export LD_LIBRARY_PATH="/usr/local/Ascend/driver/lib64:/usr/local/Ascend/driver/lib64/common:/usr/local/Ascend/driver/lib64/driver:${LD_LIBRARY_PATH:-}"
if [ ! -f native/build/libgemesh_bridge.so ]; then
  native/scripts/build.sh
fi
exec "$@"
