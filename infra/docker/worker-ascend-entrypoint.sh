#!/usr/bin/env bash
# NPU worker start: load the CANN environment of the image and the host's driver libraries, then
# run the worker. The GE bridge was built into the image against its toolkit (build-bridge.sh),
# so nothing is compiled here; a missing or mismatched bridge fails the start with the reason.
set -euo pipefail
source infra/docker/ascend-env.sh
if [ ! -f native/build/libgemesh_bridge.so ]; then
  echo "this image has no GE bridge: build the worker-ascend target of infra/docker/Dockerfile (docker compose -f docker-compose.yml -f docker-compose.ascend.yml build worker)" >&2
  exit 1
fi
# A toolkit mounted over the image's (another CANN version) would not match the bridge's build.
built_for="$(cat native/build/toolkit-home.txt 2>/dev/null || echo unknown)"
here="$(readlink -f "$ASCEND_TOOLKIT_HOME")"
if [ "$here" != "$built_for" ]; then
  echo "the GE bridge was built against the toolkit at $built_for, but ASCEND_TOOLKIT_HOME is $ASCEND_TOOLKIT_HOME ($here): rebuild the image for this toolkit (build arg ASCEND_BASE_IMAGE) instead of mounting another one" >&2
  exit 1
fi
exec "$@"
