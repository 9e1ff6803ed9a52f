#!/usr/bin/env bash
# Build the tf2_msgs interface package (TFMessage only) into the project's virtual environment.
#
# The ROS 2 wheels on PyPI ship rclpy and the common interface packages but no tf2_msgs. Its one
# message is generated here with the rosidl toolchain that the wheels also ship (ament_cmake,
# rosidl_default_generators), then installed into the venv prefix, so that
# `from tf2_msgs.msg import TFMessage` works and rclpy can publish it on /tf.
#
# Usage: scripts/build_tf2_msgs.sh [--force] [VENV]   (VENV defaults to <repo>/.venv)
# Exit status 0 when TFMessage is importable afterwards, non-zero otherwise (the log path is printed).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SRC="$ROOT/scripts/tf2_msgs"
FORCE=0
VENV=""
for arg in "$@"; do
  case "$arg" in
    --force) FORCE=1 ;;
    -h | --help)
      sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *) VENV="$arg" ;;
  esac
done
VENV=${VENV:-${KANGAROO_WBC_VENV:-$ROOT/.venv}}
VENV=$(cd "$VENV" && pwd)
PY="$VENV/bin/python"

say() { printf '[tf2_msgs] %s\n' "$*"; }
fail() {
  say "FAILED: $*"
  exit 1
}

[ -x "$PY" ] || fail "no Python in $VENV (run scripts/bootstrap.sh first)"

# The same environment as scripts/env.sh, for the venv given here.
export AMENT_PREFIX_PATH="$VENV"
export CMAKE_PREFIX_PATH="$VENV"
export PATH="$VENV/bin:$PATH"

tf_message_works() {
  "$PY" -c 'from tf2_msgs.msg import TFMessage; TFMessage()' >/dev/null 2>&1
}

if [ "$FORCE" = 0 ] && tf_message_works; then
  say "TFMessage already importable in $VENV; nothing to do"
  exit 0
fi

for tool in cmake make c++; do
  command -v "$tool" >/dev/null 2>&1 || fail "'$tool' not found (Debian: apt-get install cmake make g++)"
done
headers_ok=$("$PY" -c 'import os, sysconfig; print(os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))')
[ "$headers_ok" = True ] || fail "Python headers (Python.h) missing (Debian: apt-get install python3-dev)"

LOG="$VENV/tf2_msgs-build.log"
: >"$LOG"
BUILD=$(mktemp -d -t kangaroo_wbc-tf2_msgs.XXXXXX)
trap 'rm -rf "$BUILD"' EXIT

run() {
  # Run a build step, sending its output to the log; on failure show the log's tail.
  if ! "$@" >>"$LOG" 2>&1; then
    tail -n 25 "$LOG" | sed 's/^/    /'
    fail "'$1 ${2:-}' failed; full log: $LOG"
  fi
}

say "installing the rosidl build tools into the venv"
run "$PY" -m pip install --quiet -r "$SRC/requirements-build.txt"

say "configuring (cmake)"
run cmake -S "$SRC" -B "$BUILD" \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX="$VENV" \
  -DCMAKE_PREFIX_PATH="$VENV" \
  -DCMAKE_PROJECT_INCLUDE="$SRC/drop_missing_include_dirs.cmake" \
  -DPython3_EXECUTABLE="$PY" \
  -DPython3_FIND_VIRTUALENV=ONLY \
  -DBUILD_TESTING=OFF

say "compiling the generated type support"
run cmake --build "$BUILD" --parallel "$(nproc 2>/dev/null || echo 2)"

say "installing into $VENV"
run cmake --install "$BUILD"

if tf_message_works; then
  say "done: from tf2_msgs.msg import TFMessage works"
else
  "$PY" -c 'from tf2_msgs.msg import TFMessage; TFMessage()' >>"$LOG" 2>&1 || true
  fail "built and installed, but TFMessage still does not import; see $LOG"
fi
