#!/usr/bin/env bash
# Build the controller_manager_msgs interface package (SwitchController, ListControllers and the
# messages they carry) into the project's virtual environment.
#
# The ROS 2 wheels on PyPI ship no controller_manager_msgs. The whole-body controller needs its
# SwitchController service for the hand-over to the effort controllers (docs/ros2_control.md), and
# the simulator offers it. The interfaces, defined in scripts/controller_manager_msgs/ with the
# fields of the Kilted distribution's package, are generated with the rosidl toolchain the wheels
# ship, as scripts/build_tf2_msgs.sh does for tf2_msgs. No network access beyond PyPI.
#
# Usage: scripts/build_controller_manager_msgs.sh [--force] [VENV]   (VENV defaults to <repo>/.venv)
# Exit status 0 when SwitchController is importable afterwards, non-zero otherwise.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SRC="$ROOT/scripts/controller_manager_msgs"
TOOLS="$ROOT/scripts/tf2_msgs" # the build tools' pins and the CMake include are shared
FORCE=0
VENV=""
for arg in "$@"; do
  case "$arg" in
    --force) FORCE=1 ;;
    -h | --help)
      sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *) VENV="$arg" ;;
  esac
done
VENV=${VENV:-${KANGAROO_WBC_VENV:-$ROOT/.venv}}
VENV=$(cd "$VENV" && pwd)
PY="$VENV/bin/python"

say() { printf '[controller_manager_msgs] %s\n' "$*"; }
fail() {
  say "FAILED: $*"
  exit 1
}

[ -x "$PY" ] || fail "no Python in $VENV (run scripts/bootstrap.sh first)"

export AMENT_PREFIX_PATH="$VENV"
export CMAKE_PREFIX_PATH="$VENV"
export PATH="$VENV/bin:$PATH"

works() {
  "$PY" -c 'from controller_manager_msgs.srv import ListControllers, SwitchController
SwitchController.Request(); ListControllers.Response()' >/dev/null 2>&1
}

if [ "$FORCE" = 0 ] && works; then
  say "SwitchController already importable in $VENV; nothing to do"
  exit 0
fi

for tool in cmake make c++; do
  command -v "$tool" >/dev/null 2>&1 || fail "'$tool' not found (Debian: apt-get install cmake make g++)"
done

LOG="$VENV/controller_manager_msgs-build.log"
: >"$LOG"
WORK=$(mktemp -d -t kangaroo_wbc-cm_msgs.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

run() {
  if ! "$@" >>"$LOG" 2>&1; then
    tail -n 25 "$LOG" | sed 's/^/    /'
    fail "'$1 ${2:-}' failed; full log: $LOG"
  fi
}

say "installing the rosidl build tools into the venv"
run "$PY" -m pip install --quiet -r "$TOOLS/requirements-build.txt"
say "configuring (cmake)"
run cmake -S "$SRC" -B "$WORK/build" \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX="$VENV" \
  -DCMAKE_PREFIX_PATH="$VENV" \
  -DCMAKE_PROJECT_INCLUDE="$TOOLS/drop_missing_include_dirs.cmake" \
  -DPython3_EXECUTABLE="$PY" \
  -DPython3_FIND_VIRTUALENV=ONLY \
  -DBUILD_TESTING=OFF
say "compiling the generated type support"
run cmake --build "$WORK/build" --parallel "$(nproc 2>/dev/null || echo 2)"
say "installing into $VENV"
run cmake --install "$WORK/build"

if works; then
  say "done: from controller_manager_msgs.srv import SwitchController works"
else
  "$PY" -c 'from controller_manager_msgs.srv import SwitchController' >>"$LOG" 2>&1 || true
  fail "built and installed, but SwitchController still does not import; see $LOG"
fi
