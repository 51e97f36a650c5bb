# Helpers shared by the cluster scripts (sourced, not run).
# shellcheck shell=bash

log() { printf '==> %s\n' "$*" >&2; }

# require_tools TOOL...: stop at once, naming every missing tool in one line. "docker" means a reachable
# Docker engine (docker info), not only the client.
require_tools() {
  local missing=() tool
  for tool in "$@"; do
    if [ "$tool" = docker ]; then
      if ! command -v docker >/dev/null 2>&1; then
        missing+=("docker (no docker command)")
      elif ! docker info >/dev/null 2>&1; then
        missing+=("docker (docker info fails: is the engine running and may this user use it?)")
      fi
    elif ! command -v "$tool" >/dev/null 2>&1; then
      missing+=("$tool")
    fi
  done
  if [ ${#missing[@]} -gt 0 ]; then
    local joined
    joined=$(printf '%s, ' "${missing[@]}")
    printf '%s: missing %s; install or start what is named and retry (versions: deploy/versions.env)\n' \
      "$(basename "$0")" "${joined%, }" >&2
    exit 2
  fi
}

# wait_for DESCRIPTION TIMEOUT_S COMMAND...: rerun COMMAND every 5 s until it succeeds or the time is up.
wait_for() {
  local what=$1 timeout=$2 waited=0
  shift 2
  until "$@" >/dev/null 2>&1; do
    if [ "$waited" -ge "$timeout" ]; then
      printf 'timed out after %ss waiting for %s\n' "$timeout" "$what" >&2
      return 1
    fi
    sleep 5
    waited=$((waited + 5))
  done
}
