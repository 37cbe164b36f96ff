# Sourced by the .ci installers: apt_install LABEL PACKAGE... installs Debian packages as root
# (or through sudo), refreshing the package lists only when a package is unknown to them, and once
# more if the install fails on stale lists (a package file gone from the mirror).
apt_install() {
  local label=$1
  shift
  export DEBIAN_FRONTEND=noninteractive
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo -E"; else
      echo "$label: need root to install: $*" >&2
      return 1
    fi
  fi
  local need_update=0 pkg
  for pkg in "$@"; do apt-cache show "$pkg" >/dev/null 2>&1 || need_update=1; done
  if [ "$need_update" -eq 1 ]; then
    echo "$label: apt-get update"
    $sudo apt-get update -qq
  fi
  echo "$label: installing $*"
  if ! $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null; then
    [ "$need_update" -eq 0 ] || return 1
    echo "$label: install failed; apt-get update and retry"
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
  fi
}
