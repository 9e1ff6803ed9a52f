#!/usr/bin/env bash
# Build one of the project's interface packages into its virtual environment.
#
# The ROS 2 wheels on PyPI ship rclpy and the common interface packages, but not two that the
# nodes use:
#   tf2_msgs                 TFMessage, carried on /tf and /tf_static (scripts/tf2_msgs/)
#   controller_manager_msgs  SwitchController, ListControllers and the messages they carry, for the
#                            hand-over to the effort controllers (docs/ros2_control.md) and the
#                            simulator's stand-in of the controller manager
#                            (scripts/controller_manager_msgs/, the Kilted distribution's fields)
# Each is generated from its folder with the rosidl toolchain the wheels also ship (ament_cmake,
# rosidl_default_generators) and installed into the venv prefix like any interface package. No
# network access beyond PyPI. In a ROS 2 installation the distribution's packages are used instead.
#
# Usage: scripts/build_interfaces.sh PACKAGE [--force] [VENV]   (VENV defaults to <repo>/.venv)
# Exit status 0 when the package's interfaces import afterwards, non-zero otherwise (the log path
# is printed).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOLS="$ROOT/scripts/tf2_msgs" # the build tools' pins and the CMake include, shared by both packages
PACKAGE=""
FORCE=0
VENV=""
for arg in "$@"; do
  case "$arg" in
    --force) FORCE=1 ;;
    -h | --help)
      sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    -*)
      echo "build_interfaces.sh: unknown option '$arg' (see --help)" >&2
      exit 2
      ;;
    *) if [ -z "$PACKAGE" ]; then PACKAGE="$arg"; else VENV="$arg"; fi ;;
  esac
done

# What each package must import once built (the check that decides whether to build, and the last one).
case "$PACKAGE" in
  tf2_msgs) CHECK='from tf2_msgs.msg import TFMessage; TFMessage()' ;;
  controller_manager_msgs)
    CHECK='from controller_manager_msgs.srv import ListControllers, SwitchController
SwitchController.Request(); ListControllers.Response()'
    ;;
  "")
    echo "build_interfaces.sh: name the package: tf2_msgs or controller_manager_msgs (see --help)" >&2
    exit 2
    ;;
  *)
    echo "build_interfaces.sh: unknown package '$PACKAGE': tf2_msgs or controller_manager_msgs" >&2
    exit 2
    ;;
esac
SRC="$ROOT/scripts/$PACKAGE"
VENV=${VENV:-${KANGAROO_WBC_VENV:-$ROOT/.venv}}
VENV=$(cd "$VENV" && pwd)
PY="$VENV/bin/python"

say() { printf '[%s] %s\n' "$PACKAGE" "$*"; }
fail() {
  say "FAILED: $*"
  exit 1
}

[ -x "$PY" ] || fail "no Python in $VENV (run scripts/bootstrap.sh first)"

# The same environment as scripts/env.sh, for the venv given here.
export AMENT_PREFIX_PATH="$VENV"
export CMAKE_PREFIX_PATH="$VENV"
export PATH="$VENV/bin:$PATH"

works() {
  "$PY" -c "$CHECK" >/dev/null 2>&1
}

if [ "$FORCE" = 0 ] && works; then
  say "already importable in $VENV; nothing to do"
  exit 0
fi

for tool in cmake make c++; do
  command -v "$tool" >/dev/null 2>&1 || fail "'$tool' not found (Debian: apt-get install cmake make g++)"
done
headers_ok=$("$PY" -c 'import os, sysconfig; print(os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))')
[ "$headers_ok" = True ] || fail "Python headers (Python.h) missing (Debian: apt-get install python3-dev)"

LOG="$VENV/$PACKAGE-build.log"
: >"$LOG"
BUILD=$(mktemp -d -t "kangaroo_wbc-$PACKAGE.XXXXXX")
trap 'rm -rf "$BUILD"' EXIT

run() {
  # Run a build step, sending its output to the log; on failure show the log's tail.
  if ! "$@" >>"$LOG" 2>&1; then
    tail -n 25 "$LOG" | sed 's/^/    /'
    fail "'$1 ${2:-}' failed; full log: $LOG"
  fi
}

say "installing the rosidl build tools into the venv"
run "$PY" -m pip install --quiet -r "$TOOLS/requirements-build.txt"

say "configuring (cmake)"
run cmake -S "$SRC" -B "$BUILD" \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX="$VENV" \
  -DCMAKE_PREFIX_PATH="$VENV" \
  -DCMAKE_PROJECT_INCLUDE="$TOOLS/drop_missing_include_dirs.cmake" \
  -DPython3_EXECUTABLE="$PY" \
  -DPython3_FIND_VIRTUALENV=ONLY \
  -DBUILD_TESTING=OFF

say "compiling the generated type support"
run cmake --build "$BUILD" --parallel "$(nproc 2>/dev/null || echo 2)"

say "installing into $VENV"
run cmake --install "$BUILD"

if works; then
  say "done: its interfaces import"
else
  "$PY" -c "$CHECK" >>"$LOG" 2>&1 || true
  fail "built and installed, but its interfaces still do not import; see $LOG"
fi
