#!/usr/bin/env bash
# Build the ROS 2 launch tooling (launch, launch_ros, launch_testing, `ros2 launch`) into a scratch
# prefix next to a pip-based ROS 2 environment, and register kangaroo_wbc there as an ament package.
#
# A real ROS 2 installation already has all of this (ros-<distro>-launch-testing-ros, ros2launch,
# robot_state_publisher...): use `colcon build` there instead. The ROS 2 wheels on PyPI ship rclpy
# but not the launch stack, which this script installs from source checkouts of
#   ros2/launch          launch, launch_xml, launch_yaml, launch_testing
#   ros2/launch_ros      launch_ros, launch_testing_ros, ros2launch
#   ros2/ros2cli         ros2cli, ros2pkg, ros2run
#   ros2/rcl_interfaces  composition_interfaces (generated with the rosidl tools of the venv)
# plus osrf_pycommon, psutil, catkin_pkg (PyPI unless a checkout is given). The prefix is an ament
# prefix; kangaroo_wbc is registered in it with links to the files of this repository's launch/,
# config/ and urdf/ and to the venv's node executables (so edits apply without reinstalling).
#
# Usage: scripts/launch_tools.sh [--src DIR] [--ref REF] [--venv VENV] [DEST]
#   DEST    the prefix to create (default /tmp/kangaroo_wbc-launch)
#   --src   folder holding checkouts named launch/, launch_ros/, ros2cli/, rcl_interfaces/ (and
#           optionally osrf_pycommon/); missing ones are cloned from GitHub at REF
#   --ref   branch or tag to clone (default kilted)
#   --venv  the project venv (default $KANGAROO_WBC_VENV or <repo>/.venv)
# Then:  source scripts/env.sh && source DEST/env.sh && ros2 launch kangaroo_wbc kangaroo_wbc.launch.py
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DEST=""
SRC=""
REF=kilted
VENV=${KANGAROO_WBC_VENV:-$ROOT/.venv}
while [ $# -gt 0 ]; do
  case "$1" in
    --src) SRC=$2; shift 2 ;;
    --ref) REF=$2; shift 2 ;;
    --venv) VENV=$2; shift 2 ;;
    -h | --help) sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) DEST=$1; shift ;;
  esac
done
DEST=${DEST:-/tmp/kangaroo_wbc-launch}

say() { printf '[launch_tools] %s\n' "$*"; }
fail() { say "FAILED: $*"; exit 1; }

VENV=$(cd "$VENV" 2>/dev/null && pwd) || fail "no venv at $VENV (run scripts/bootstrap.sh first)"
PY="$VENV/bin/python"
[ -x "$PY" ] || fail "no Python in $VENV (run scripts/bootstrap.sh first)"
[ -d "$VENV/share/rosidl_default_generators" ] \
  || fail "the rosidl build tools are not in $VENV (run scripts/build_interfaces.sh tf2_msgs first)"
for tool in cmake make c++ git; do
  command -v "$tool" >/dev/null 2>&1 || fail "'$tool' not found"
done
mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
PYVER=$("$PY" -c 'import sys; print(f"python{sys.version_info[0]}.{sys.version_info[1]}")')
SITE="$DEST/lib/$PYVER/site-packages"
LOG="$DEST/build.log"
: >"$LOG"
SRC=${SRC:-$DEST/src}
mkdir -p "$SRC"
SRC=$(cd "$SRC" && pwd)

run() {
  if ! "$@" >>"$LOG" 2>&1; then
    tail -n 25 "$LOG" | sed 's/^/    /'
    fail "'$*' failed; full log: $LOG"
  fi
}

checkout() {  # checkout NAME URL: a source tree at $SRC/NAME (cloned at $REF when missing)
  if [ ! -d "$SRC/$1" ]; then
    say "cloning $2 at $REF"
    run git clone --quiet --depth 1 --branch "$REF" "$2" "$SRC/$1"
  fi
}
checkout launch https://github.com/ros2/launch.git
checkout launch_ros https://github.com/ros2/launch_ros.git
checkout ros2cli https://github.com/ros2/ros2cli.git
checkout rcl_interfaces https://github.com/ros2/rcl_interfaces.git

# Same environment as scripts/env.sh, with the prefix first.
export AMENT_PREFIX_PATH="$DEST:$VENV"
export CMAKE_PREFIX_PATH="$DEST;$VENV"
export PATH="$DEST/bin:$VENV/bin:$PATH"
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
pip_prefix() { run "$PY" -m pip install --quiet --disable-pip-version-check --prefix "$DEST" "$@"; }

say "installing the Python dependencies (PyPI) into $DEST"
deps=(psutil)
"$PY" -c 'import catkin_pkg' 2>/dev/null || deps+=(catkin_pkg)
"$PY" -c 'import lark' 2>/dev/null || deps+=(lark)
if [ -d "$SRC/osrf_pycommon" ]; then
  pip_prefix --no-deps --no-build-isolation "$SRC/osrf_pycommon"
else
  deps+=(osrf-pycommon)
fi
# launch_testing's pytest plugin does not load under pytest 9
if ! "$PY" -c 'import sys, pytest; sys.exit(int(pytest.__version__.split(".")[0]) >= 9)' 2>/dev/null; then
  deps+=('pytest<9')
fi
pip_prefix "${deps[@]}"

say "installing launch, launch_ros, launch_testing and ros2cli from $SRC"
packages=()
for p in launch/launch launch/launch_xml launch/launch_yaml launch/launch_testing \
  launch_ros/launch_ros launch_ros/launch_testing_ros launch_ros/ros2launch \
  ros2cli/ros2cli ros2cli/ros2pkg ros2cli/ros2run; do
  [ -f "$SRC/$p/setup.py" ] || fail "$SRC/$p/setup.py missing"
  packages+=("$SRC/$p")
done
pip_prefix --no-deps --no-build-isolation "${packages[@]}"

if "$PY" -c 'import composition_interfaces.srv' 2>/dev/null; then
  say "composition_interfaces already importable"
else
  say "generating composition_interfaces (rosidl, cmake)"
  BUILD=$(mktemp -d -t kangaroo_wbc-composition.XXXXXX)
  trap 'rm -rf "$BUILD"' EXIT
  run cmake -S "$SRC/rcl_interfaces/composition_interfaces" -B "$BUILD" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$DEST" \
    -DCMAKE_PREFIX_PATH="$DEST;$VENV" \
    -DCMAKE_PROJECT_INCLUDE="$ROOT/scripts/tf2_msgs/drop_missing_include_dirs.cmake" \
    -DPython3_EXECUTABLE="$PY" \
    -DPython3_FIND_VIRTUALENV=ONLY \
    -DBUILD_TESTING=OFF
  run cmake --build "$BUILD" --parallel "$(nproc 2>/dev/null || echo 2)"
  run cmake --install "$BUILD"
fi

say "registering kangaroo_wbc in the ament prefix (links to $ROOT and $VENV)"
share="$DEST/share/kangaroo_wbc"
mkdir -p "$share" "$DEST/share/ament_index/resource_index/packages" "$DEST/lib/kangaroo_wbc"
: >"$DEST/share/ament_index/resource_index/packages/kangaroo_wbc"
# real folders of per-file links: `ros2 launch` searches the share folder without following
# linked folders (re-run this script after adding a file to launch/, config/ or urdf/)
ln -sfn "$ROOT/package.xml" "$share/package.xml"
for dir in launch config urdf; do
  rm -rf "${share:?}/$dir"
  mkdir -p "$share/$dir"
  for file in "$ROOT/$dir"/*; do
    [ -f "$file" ] && ln -s "$file" "$share/$dir/"
  done
done
executables=$("$PY" -c 'import ast, sys
tree = ast.parse(open(sys.argv[1]).read())
for node in tree.body:
    if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "NODES":
        print(" ".join(ast.literal_eval(node.value)))' "$ROOT/setup.py")
# pip installs each node as kangaroo_wbc_<node> (the bare names only under colcon: setup.py)
for exe in $executables; do
  script="$VENV/bin/kangaroo_wbc_$exe"
  [ -x "$script" ] || fail "$script missing: run 'pip install -e . --no-deps' in the venv"
  ln -sfn "$script" "$DEST/lib/kangaroo_wbc/$exe"
done

cat >"$DEST/env.sh" <<EOF
# Source after scripts/env.sh: the launch tooling and the kangaroo_wbc ament package of $DEST.
export PATH="$DEST/bin\${PATH:+:\$PATH}"
export PYTHONPATH="$SITE\${PYTHONPATH:+:\$PYTHONPATH}"
export AMENT_PREFIX_PATH="$DEST\${AMENT_PREFIX_PATH:+:\$AMENT_PREFIX_PATH}"
export LD_LIBRARY_PATH="$DEST/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
EOF

# shellcheck disable=SC1091
if (. "$DEST/env.sh" && "$PY" -c 'import launch_testing_ros, launch_ros.actions, composition_interfaces.srv
from ament_index_python.packages import get_package_share_directory as share
share("kangaroo_wbc")') >>"$LOG" 2>&1; then
  say "done: source scripts/env.sh && source $DEST/env.sh"
else
  fail "installed, but launch_ros or kangaroo_wbc does not import/resolve; see $LOG"
fi
