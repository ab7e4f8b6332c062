#!/usr/bin/env bash
# Image build step of the NPU worker (Dockerfile target worker-ascend): compile the GE bridge
# against the CANN toolkit of the base image, so a container starts ready instead of building
# on its first start. Fails the image build unless the bridge linked that toolkit: a base image
# without one would otherwise give a bridge over the CANN simulator.
set -euo pipefail
cd "$(dirname "$0")/../.."
source infra/docker/ascend-env.sh
if [ ! -d "$ASCEND_TOOLKIT_HOME" ]; then
  echo "no CANN toolkit at $ASCEND_TOOLKIT_HOME in the base image: build with --build-arg ASCEND_BASE_IMAGE=<a CANN toolkit image>, and --build-arg ASCEND_TOOLKIT_HOME=<its toolkit> if it is elsewhere" >&2
  exit 1
fi
rm -rf native/build
out="$(native/scripts/build.sh)"
echo "$out"
if ! grep -qx 'linked against: cann' <<<"$out"; then
  echo "the GE bridge did not link the toolkit at $ASCEND_TOOLKIT_HOME" >&2
  exit 1
fi
# Which toolkit the bridge was built against, for the entrypoint to check at start.
readlink -f "$ASCEND_TOOLKIT_HOME" >native/build/toolkit-home.txt
