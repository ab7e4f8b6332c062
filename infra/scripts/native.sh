#!/usr/bin/env bash
# setup's native step: the GE bridge in native/build. Installs the Debian packages it needs
# (native/apt-packages.txt) when run as root with apt-get, as CI does; otherwise, when some are
# missing, skips the bridge with one line naming them. Never fails setup: the ort runtime needs
# no native code, and the native tests skip themselves when the bridge is absent.
# GEMESH_NATIVE_CONFIGURE_ONLY=1 stops after CMake's configure step (a quick check).
set -uo pipefail
cd "$(dirname "$0")/../.."

[ -x native/scripts/build.sh ] || exit 0
# With an Ascend toolkit the real CANN libraries are linked and the simulator's packages are not needed.
toolkit="${ASCEND_TOOLKIT_HOME:-/usr/local/Ascend/ascend-toolkit/latest}"
pkgs=$(sed 's/#.*//' native/apt-packages.txt | xargs)
missing=""
if command -v dpkg >/dev/null 2>&1 && [ ! -d "$toolkit" ]; then
  for p in $pkgs; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
  missing="${missing# }"
fi
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    printf '\n==> installing the native build'"'"'s packages: %s\n' "$missing"
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing; }; then
      echo "native GE bridge skipped: apt-get could not install $missing (the ort runtime does not need it)."
      exit 0
    fi
  else
    echo "native GE bridge skipped: install $missing (sudo apt-get install $missing) to build it; the ort runtime does not need it."
    exit 0
  fi
fi
if ! command -v cmake >/dev/null 2>&1 || ! command -v g++ >/dev/null 2>&1; then
  echo "native GE bridge skipped: install cmake and g++ (and $pkgs) to build it; the ort runtime does not need it."
  exit 0
fi

printf '\n==> building the native GE bridge\n'
if ! native/scripts/build.sh; then
  echo "native GE bridge not built (the error is above; native/scripts/build.sh retries it); the ort runtime does not need it."
fi
exit 0
