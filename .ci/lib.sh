# Shared helpers for .ci/run and the drop-in steps in .ci/install.d and .ci/check.d.
# Sourced, not executed.

# Starts a step, saying how long the previous one took (CI must stay under about 25 minutes:
# the log shows where the time goes).
step() {
  local now; now=$(date +%s)
  [ -n "${PICOLLO_STEP_START:-}" ] && printf '(%s s)\n' "$(( now - PICOLLO_STEP_START ))"
  PICOLLO_STEP_START=$now
  printf '\n==> %s\n' "$*"
}

# Runs a command as root: directly when we are root, else through sudo when it exists.
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null 2>&1; then sudo "$@"; else
    echo "error: need root to run: $*" >&2; return 1; fi
}

# Installs Debian packages that are missing, without recommends; `apt-get update` runs at
# most once per CI run.
apt_install() {
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  command -v apt-get >/dev/null 2>&1 || { echo "error: apt-get missing; install ${missing[*]} by hand" >&2; return 1; }
  if [ -z "${PICOLLO_APT_UPDATED:-}" ]; then
    as_root apt-get update -qq
    export PICOLLO_APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "${missing[@]}"
}
