#!/usr/bin/env bash
# Build controller_manager_msgs (ros2_control's messages and services) into the project's venv.
#
# The ROS 2 wheels on PyPI ship no controller_manager_msgs. The whole-body controller needs its
# SwitchController service for the hand-over to the effort controllers (docs/ros2_control.md), and
# the simulator offers it. The package's own sources are downloaded from ros2_control at a pinned
# release of the Kilted branch (REF below), checked against a pinned hash of the package's files;
# the interfaces used (SwitchController, ListControllers and their messages) are generated with the
# same rosidl toolchain as scripts/build_tf2_msgs.sh (scripts/controller_manager_msgs/CMakeLists.txt).
#
# Usage: scripts/build_controller_manager_msgs.sh [--force] [--source TARBALL|DIR] [VENV]
#   --source: an already downloaded ros2_control tarball or checkout of REF (no network needed)
# Exit status 0 when SwitchController is importable afterwards, non-zero otherwise.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOLS="$ROOT/scripts/tf2_msgs" # the build tools' pins and the CMake include are shared
# ros2_control 5.16.0 (branch kilted): the package's sources and their hash (path, sha256 of each file)
REF=ab50366f92e77d716ea756e326fb959951a28a57
TREE_SHA256=a067ecbf217fe05966ffe1d9026fe3d48693ad548345cd721b3fe9c41538b428
URL="https://codeload.github.com/ros-controls/ros2_control/tar.gz/$REF"
FORCE=0
VENV=""
SOURCE=""
while [ $# -gt 0 ]; do
  case "$1" in
    --force) FORCE=1 ;;
    --source)
      SOURCE=${2:?--source needs a path}
      shift
      ;;
    -h | --help)
      sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *) VENV="$1" ;;
  esac
  shift
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

# 1. The sources: a cached or given tarball of REF, else downloaded once into the cache.
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/kangaroo_wbc"
TARBALL="$CACHE/ros2_control-$REF.tar.gz"
if [ -n "$SOURCE" ] && [ -d "$SOURCE" ]; then
  PKG="$SOURCE/controller_manager_msgs"
  [ -d "$PKG" ] || fail "$SOURCE has no controller_manager_msgs directory"
else
  if [ -n "$SOURCE" ]; then
    TARBALL="$SOURCE"
  elif [ ! -s "$TARBALL" ]; then
    say "downloading ros2_control $REF (5.16.0, kilted)"
    mkdir -p "$CACHE"
    "$PY" - "$URL" "$TARBALL.part" <<'EOF' >>"$LOG" 2>&1 || fail "download of $URL failed (no network? see $LOG; or pass --source)"
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=60) as r, open(sys.argv[2], "wb") as f:
    f.write(r.read())
EOF
    mv "$TARBALL.part" "$TARBALL"
  fi
  run tar -xzf "$TARBALL" -C "$WORK" --wildcards '*/controller_manager_msgs/*'
  PKG=$(find "$WORK" -maxdepth 2 -type d -name controller_manager_msgs | head -n 1)
  [ -n "$PKG" ] || fail "$TARBALL holds no controller_manager_msgs"
fi

# 2. The files are the pinned release's, byte for byte (the service types' hashes depend on them).
have=$("$PY" - "$PKG" <<'EOF'
import hashlib, os, sys
root = sys.argv[1]
files = sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)
h = hashlib.sha256()
for rel in files:
    with open(os.path.join(root, rel), "rb") as fh:
        h.update(f"{rel}\0{hashlib.sha256(fh.read()).hexdigest()}\n".encode())
print(h.hexdigest())
EOF
)
if [ "$have" != "$TREE_SHA256" ]; then
  [ -n "$SOURCE" ] || rm -f "$TARBALL"
  fail "controller_manager_msgs sources differ from ros2_control $REF (hash $have); not built"
fi

# 3. The interfaces used (scripts/controller_manager_msgs/CMakeLists.txt) with the release's
#    package.xml, generated, compiled and installed as scripts/build_tf2_msgs.sh does for tf2_msgs.
mkdir -p "$WORK/pkg/msg" "$WORK/pkg/srv"
cp "$ROOT/scripts/controller_manager_msgs/CMakeLists.txt" "$PKG/package.xml" "$WORK/pkg/"
for f in msg/ChainConnection.msg msg/ControllerState.msg srv/ListControllers.srv srv/SwitchController.srv; do
  cp "$PKG/$f" "$WORK/pkg/$f"
done
say "installing the rosidl build tools into the venv"
run "$PY" -m pip install --quiet -r "$TOOLS/requirements-build.txt"
say "configuring (cmake)"
run cmake -S "$WORK/pkg" -B "$WORK/build" \
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
