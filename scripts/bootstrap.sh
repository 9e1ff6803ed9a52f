#!/usr/bin/env bash
# Create or update the project's virtual environment (.venv) from nothing but Python 3.11.
#
#   scripts/bootstrap.sh [--runtime-only] [--force]
#
# Steps (each skipped when already done, so running it again is cheap):
#   1. system tools: python3.11 with venv, cmake, make, g++ (installed with apt-get when missing
#      and running as root on Debian/Ubuntu)
#   2. .venv created with `python3 -m venv`
#   3. pinned requirements.txt (+ requirements-dev.txt unless --runtime-only), then `pip install -e .`
#   4. tf2_msgs (TFMessage) built into the venv by scripts/build_interfaces.sh; a failure there is
#      reported and does not fail the bootstrap (TF then falls back at run time)
#   5. controller_manager_msgs (SwitchController, ListControllers) built into the venv from
#      scripts/controller_manager_msgs/ by scripts/build_interfaces.sh; a failure is reported and
#      does not fail the bootstrap (the nodes on ros2_control then stop with an error naming it)
# --force reinstalls the requirements and rebuilds tf2_msgs and controller_manager_msgs.
# Environment: PYTHON (interpreter to use), KANGAROO_WBC_VENV (venv location, default <repo>/.venv).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${KANGAROO_WBC_VENV:-$ROOT/.venv}
PIP_VERSION=26.3
DEV=1
FORCE=0
for arg in "$@"; do
  case "$arg" in
    --runtime-only) DEV=0 ;;
    --force) FORCE=1 ;;
    -h | --help)
      sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "bootstrap.sh: unknown argument '$arg' (try --help)" >&2
      exit 2
      ;;
  esac
done

START=$(date +%s)
say() { printf '[bootstrap] %s\n' "$*"; }
die() {
  say "ERROR: $*"
  exit 1
}

# Two bootstraps of the same tree at once (say `make -j test lint`) wait for each other.
if command -v flock >/dev/null 2>&1; then
  LOCK="$(dirname "$(mktemp -u)")/kangaroo_wbc-bootstrap-$(printf '%s' "$VENV" | cksum | cut -d' ' -f1).lock"
  exec 9>"$LOCK"
  flock 9
fi

APT_UPDATED=0
apt_install() {
  # apt_install PACKAGE...: install Debian packages when possible, else say what is missing.
  if ! command -v apt-get >/dev/null 2>&1; then
    say "missing: $* (no apt-get here; install them with the system's package manager)"
    return 1
  fi
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      sudo="sudo -n"
    else
      say "missing: $* (run: sudo apt-get install $*)"
      return 1
    fi
  fi
  say "installing system packages: $*"
  if [ "$APT_UPDATED" = 0 ]; then
    $sudo apt-get update -qq >/dev/null || true
    APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

is_py311() { "$1" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' >/dev/null 2>&1; }

# 1. Python 3.11 ---------------------------------------------------------------------------------
# The ROS 2 wheels are built for CPython 3.11 only.
PY=${PYTHON:-}
if [ -z "$PY" ]; then
  for candidate in python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 && is_py311 "$candidate"; then
      PY=$(command -v "$candidate")
      break
    fi
  done
fi
if [ -z "$PY" ]; then
  apt_install python3 python3-venv || true
  if command -v python3.11 >/dev/null 2>&1 && is_py311 python3.11; then PY=$(command -v python3.11); fi
fi
if [ -z "$PY" ] || ! is_py311 "$PY"; then
  die "Python 3.11 is required (the ROS 2 wheels are cp311); set PYTHON=/path/to/python3.11"
fi
say "python: $PY ($("$PY" -c 'import sys; print(sys.version.split()[0])'))"

# 2. The virtual environment -------------------------------------------------------------------
venv_ok() {
  # A usable venv is a Python 3.11 whose prefix is this very directory (a venv copied or moved
  # from elsewhere has scripts pointing at the old place).
  [ -x "$VENV/bin/python" ] && [ -x "$VENV/bin/pip" ] || return 1
  local prefix here shebang
  prefix=$("$VENV/bin/python" -c 'import os, sys; print(os.path.realpath(sys.prefix))' 2>/dev/null) || return 1
  here=$(cd "$VENV" && pwd -P)
  [ "$prefix" = "$here" ] && is_py311 "$VENV/bin/python" || return 1
  shebang=$(head -n1 "$VENV/bin/pip")
  shebang=${shebang#\#!}
  case "$shebang" in
    */bin/python*) [ "$(cd "$(dirname "$shebang")/.." 2>/dev/null && pwd -P)" = "$here" ] ;;
    *) return 0 ;; # long paths get a /bin/sh trampoline instead
  esac
}
NEW_VENV=0
if venv_ok; then
  say "venv: $VENV (exists)"
else
  if [ -e "$VENV" ]; then
    say "venv: $VENV is unusable (moved, broken or another Python); recreating it"
    rm -rf "$VENV"
  fi
  say "venv: creating $VENV"
  NEW_VENV=1
  if ! "$PY" -m venv "$VENV" 2>/dev/null; then
    rm -rf "$VENV"
    # Debian's python3 has venv/ensurepip in a separate package.
    apt_install python3.11-venv || apt_install python3-venv || true
    "$PY" -m venv "$VENV" || die "'$PY -m venv' failed (Debian: apt-get install python3.11-venv)"
  fi
  venv_ok || die "the new venv at $VENV does not work"
fi
VPY="$VENV/bin/python"
export PIP_DISABLE_PIP_VERSION_CHECK=1

pip_install() {
  # pip install, quiet, minus the warnings about configured package locations that do not exist.
  "$VPY" -m pip install --quiet "$@" 2>&1 \
    | { grep -v -e "is ignored: it is neither a file nor a directory" || true; }
  return "${PIPESTATUS[0]}"
}

# 3. Python dependencies and the package itself --------------------------------------------------
REQ_FILES=(requirements.txt)
[ "$DEV" = 1 ] && REQ_FILES+=(requirements-dev.txt)
STAMP="$VENV/.kangaroo_wbc-requirements.sha256"
want_stamp=$(cd "$ROOT" && {
  echo "dev=$DEV pip=$PIP_VERSION"
  for f in "${REQ_FILES[@]}" setup.py setup.cfg; do [ ! -f "$f" ] || cat "$f"; done
} | sha256sum | cut -d' ' -f1)
have_stamp=$(cat "$STAMP" 2>/dev/null || true)

if [ "$FORCE" = 0 ] && [ "$want_stamp" = "$have_stamp" ] && [ -x "$VENV/bin/kangaroo-wbc" ]; then
  say "python packages: up to date (${REQ_FILES[*]})"
else
  rm -f "$STAMP"
  if [ "$("$VPY" -m pip --version | cut -d' ' -f2)" != "$PIP_VERSION" ]; then
    say "pip: installing pip $PIP_VERSION"
    pip_install "pip==$PIP_VERSION" || die "could not install pip $PIP_VERSION"
  fi
  cd "$ROOT"
  [ "$NEW_VENV" = 0 ] || say "python packages: a first install downloads several hundred MB"
  for req in "${REQ_FILES[@]}"; do
    say "python packages: installing $req"
    pip_install -r "$req" || die "pip install -r $req failed"
  done
  say "python packages: pip install -e . (kangaroo_wbc, editable)"
  pip_install --no-deps --no-build-isolation -e . || die "pip install -e . failed"
  [ -x "$VENV/bin/kangaroo-wbc" ] || die "pip install -e . did not create the kangaroo-wbc console script"
  echo "$want_stamp" >"$STAMP"
fi

# 4-5. the interface packages no wheel provides ---------------------------------------------------
# tf2_msgs (a failure is reported, TF then falls back at run time) and controller_manager_msgs (a
# failure is reported, the nodes on ros2_control then stop with an error naming it), both built by
# scripts/build_interfaces.sh.
interface_works() {
  (
    # shellcheck disable=SC1091
    source "$ROOT/scripts/env.sh" >/dev/null 2>&1 && python -c "$2"
  ) >/dev/null 2>&1
}
build_tools_checked=0
for entry in "tf2_msgs|TFMessage|from tf2_msgs.msg import TFMessage; TFMessage()|TF falls back at run time" \
  "controller_manager_msgs|SwitchController|from controller_manager_msgs.srv import SwitchController|the nodes on ros2_control need it"; do
  IFS='|' read -r package what check consequence <<<"$entry"
  if [ "$FORCE" = 0 ] && interface_works "$package" "$check"; then
    say "$package: $what importable (already built)"
    continue
  fi
  if [ "$build_tools_checked" = 0 ]; then
    build_tools_checked=1
    missing=()
    for tool in cmake make g++; do command -v "$tool" >/dev/null 2>&1 || missing+=("$tool"); done
    [ ${#missing[@]} = 0 ] || apt_install "${missing[@]}" || true
    if [ "$("$VPY" -c 'import os, sysconfig; print(os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))')" != True ]; then
      apt_install python3-dev || true
    fi
  fi
  say "$package: building $what into the venv (about 20 s)"
  force_flag=()
  [ "$FORCE" = 1 ] && force_flag=(--force)
  if bash "$ROOT/scripts/build_interfaces.sh" "$package" "${force_flag[@]}" "$VENV"; then
    say "$package: built"
  else
    say "WARNING: $package could not be built; continuing without it ($consequence)."
  fi
done
say "done in $(($(date +%s) - START)) s. Use it with: source scripts/env.sh   (or: make test / make demo)"
