#!/usr/bin/env bash
# Configure (first time) and build the native bridge into native/build (Release).
# With an Ascend toolkit (ASCEND_TOOLKIT_HOME, or /usr/local/Ascend/ascend-toolkit/latest)
# it links the real CANN libraries; otherwise it builds and links the CANN simulator.
# A second run only rebuilds what changed. Extra arguments go to the CMake configure step.
# GEMESH_NATIVE_CONFIGURE_ONLY=1 stops after the configure step.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${GEMESH_NATIVE_BUILD_DIR:-$here/build}"
jobs="${GEMESH_BUILD_JOBS:-$(nproc 2>/dev/null || echo 2)}"

# A configure that failed (say, a missing library) leaves a cache but no build files: configure
# again then, so installing what was missing is all it takes.
configure() { cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null; }
if [[ ! -f "$build/CMakeCache.txt" || ! -f "$build/cmake_install.cmake" || ! -f "$build/Makefile" || $# -gt 0 ]]; then
  # A cache CMake cannot use (corrupt, or written for another source tree) fails the configure:
  # start from an empty build dir once before giving up.
  if ! configure "$@" 2>/dev/null; then
    [[ -d "$build" ]] && find "$build" -mindepth 1 -delete
    configure "$@"
  fi
fi
[[ "${GEMESH_NATIVE_CONFIGURE_ONLY:-}" == 1 ]] && exit 0
cmake --build "$build" --parallel "$jobs"
backend="$(sed -n 's/^GEMESH_BACKEND:INTERNAL=//p' "$build/CMakeCache.txt")"
echo "linked against: ${backend:-unknown}"
echo "bridge: $build/libgemesh_bridge.so"
