# shellcheck shell=bash
# Environment for running kangaroo_wbc from the project's virtual environment (.venv).
#
#   source scripts/env.sh      (bash or zsh; the Makefile, CI and the tests use it)
#
# Activates the venv and sets what the ROS 2 wheels need to run outside a ROS installation:
#   AMENT_PREFIX_PATH      the venv prefix (the wheels register their packages there)
#   LD_LIBRARY_PATH        <venv>/lib and the wheels' bundled libraries (site-packages/ros_*.libs)
#   RMW_IMPLEMENTATION     rmw_fastrtps_cpp (the only middleware installed)
#   ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST   never talk to other machines
#   ROS_DOMAIN_ID          random in 1..100 unless already set, so that parallel runs do not meet
#   ROS_LOG_DIR            a fresh temporary directory unless already set
# Set KANGAROO_WBC_VENV to use a venv elsewhere than <repo>/.venv.

if [ -n "${BASH_VERSION:-}" ]; then
  _kw_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
elif [ -n "${ZSH_VERSION:-}" ]; then
  # shellcheck disable=SC2296
  _kw_root=$(cd "$(dirname "${(%):-%x}")/.." && pwd)
else
  _kw_root=${KANGAROO_WBC_ROOT:-$PWD}
fi
_kw_venv=${KANGAROO_WBC_VENV:-$_kw_root/.venv}

if [ ! -x "$_kw_venv/bin/python" ]; then
  echo "scripts/env.sh: no virtual environment at $_kw_venv; run scripts/bootstrap.sh (or make setup) first" >&2
  unset _kw_root _kw_venv
  # shellcheck disable=SC2317  # exit only when run instead of sourced
  return 1 2>/dev/null || exit 1
fi
_kw_venv=$(cd "$_kw_venv" && pwd)

# shellcheck disable=SC1091
VIRTUAL_ENV_DISABLE_PROMPT=${VIRTUAL_ENV_DISABLE_PROMPT:-1} . "$_kw_venv/bin/activate"

export KANGAROO_WBC_ROOT="$_kw_root"
export AMENT_PREFIX_PATH="$_kw_venv"

# The wheels' shared libraries are found through LD_LIBRARY_PATH. The wheels' own start-up hook
# (ros_wheels_bootstrapper) would otherwise set it and re-execute every Python process; setting it
# here once makes that unnecessary.
_kw_ld="$_kw_venv/lib"
while IFS= read -r _kw_dir; do
  _kw_ld="$_kw_ld:$_kw_dir"
done < <(find "$_kw_venv/lib" -mindepth 3 -maxdepth 3 -type d -path '*/site-packages/ros_*.libs' | sort)
case ":${LD_LIBRARY_PATH:-}:" in
  *":$_kw_venv/lib:"*) ;;
  *) export LD_LIBRARY_PATH="$_kw_ld${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ;;
esac
export _ROS_WHEELS_BOOTSTRAP_COMPLETE=1

export RMW_IMPLEMENTATION=rmw_fastrtps_cpp
export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
if [ -z "${ROS_DOMAIN_ID:-}" ]; then
  export ROS_DOMAIN_ID=$((RANDOM % 100 + 1))
fi
if [ -z "${ROS_LOG_DIR:-}" ]; then
  ROS_LOG_DIR=$(mktemp -d -t kangaroo_wbc-ros-log.XXXXXX)
  export ROS_LOG_DIR
fi

unset _kw_root _kw_venv _kw_ld _kw_dir
