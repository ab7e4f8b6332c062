# Sourced (bash) by the NPU worker image at build time (the bridge's compile) and at start:
# the CANN toolkit's environment and the host driver's libraries.
# ASCEND_TOOLKIT_HOME comes from the image (the ASCEND_TOOLKIT_HOME build arg).
toolkit="${ASCEND_TOOLKIT_HOME:-/usr/local/Ascend/ascend-toolkit/latest}"
for env_script in "$toolkit/../set_env.sh" "$toolkit/set_env.sh"; do
  if [ -f "$env_script" ]; then
    # set_env.sh reads unset variables.
    set +u
    # shellcheck disable=SC1090
    source "$env_script"
    set -u
    break
  fi
done
export ASCEND_TOOLKIT_HOME="$toolkit"
# The driver is the host's, mounted at run time (docker-compose.ascend.yml); absent at build time.
export LD_LIBRARY_PATH="/usr/local/Ascend/driver/lib64:/usr/local/Ascend/driver/lib64/common:/usr/local/Ascend/driver/lib64/driver:${LD_LIBRARY_PATH:-}"
