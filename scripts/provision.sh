#!/usr/bin/env bash
# Installs what AI Fabric Lab needs on Debian 12 or Ubuntu 22.04/24.04: Debian packages (Mininet,
# iproute2, tools the tests use) and a pinned Python environment in .venv with the project's
# commands. As root it also links those commands into /usr/local/bin, which is on sudo's PATH
# (secure_path), so `sudo fabric-lab ...` works from any shell. Waits while another package
# manager holds apt's locks. Idempotent: a second run with nothing changed does nothing. Used by
# `make setup` and by the Vagrantfile. Also installs tshark dissectors for the lab's own headers.
#   FABRIC_LAB_LAUNCHER_DIR  where the command links go (default /usr/local/bin)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv="$repo/.venv"
stamp="$venv/.setup-stamp"
launcher_dir=${FABRIC_LAB_LAUNCHER_DIR:-/usr/local/bin}
commands=(fabric-lab p4switch p4switch-compile p4switch-stf p4switch-cli)
APT_WAIT_WHO=provision
# shellcheck source=apt_wait.sh source-path=SCRIPTDIR
. "$repo/scripts/apt_wait.sh"

apt_packages=(
  mininet openvswitch-switch iproute2 iputils-ping ethtool net-tools psmisc
  tcpdump tshark python3 python3-venv python3-dev gcc make shellcheck ruby
  openssh-client openssh-server sudo
)
# Headless Chromium renders the results page in a test. Debian packages it; Ubuntu only ships a
# snap wrapper, so there the report test skips.
# shellcheck source=/dev/null
if [ -r /etc/os-release ] && (. /etc/os-release && [ "$ID" = debian ]); then
  apt_packages+=(chromium)
fi

missing_packages() {
  local pkg
  for pkg in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || echo "$pkg"
  done
}

install_apt() {
  local missing
  mapfile -t missing < <(missing_packages)
  [ "${#missing[@]}" -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "provision: these Debian packages are missing: ${missing[*]}" >&2
    echo "provision: run as root (sudo make setup) to install them." >&2
    exit 1
  fi
  echo "provision: installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # tshark asks whether non-root users may capture; the default (no) is fine.
  local answers
  answers=$(mktemp)
  echo "wireshark-common wireshark-common/install-setuid boolean false" > "$answers"
  with_lock_wait debconf-set-selections "$answers"
  rm -f "$answers"
  apt_get update -qq
  apt_get install -y -qq --no-install-recommends "${missing[@]}"
}

setup_fingerprint() {
  cat "$repo/requirements.txt" "$repo/pyproject.toml" "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1
}

install_python() {
  local want
  want=$(setup_fingerprint)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$venv/bin/fabric-lab" ]; then
    return 0
  fi
  echo "provision: creating the Python environment in $venv"
  # Debian's Mininet lives in the system Python: the venv must see system site packages.
  [ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv --system-site-packages "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$repo/requirements.txt"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e "$repo"
  echo "$want" > "$stamp"
}

# Links in $launcher_dir to the venv's commands: sudo resets PATH to its secure_path, which has
# /usr/local/bin but never the venv, and a plain user's PATH has /usr/local/bin as well.
install_launchers() {
  local cmd target link linked=() missing=()
  for cmd in "${commands[@]}"; do
    target="$venv/bin/$cmd"
    link="$launcher_dir/$cmd"
    [ -L "$link" ] && [ "$(readlink "$link")" = "$target" ] && continue
    if [ -e "$link" ] && [ ! -L "$link" ]; then
      echo "provision: $link exists and is not a link; leaving it (use $target)" >&2
      continue
    fi
    missing+=("$cmd")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "provision: the lab's commands are in $venv/bin, which is not on PATH (and sudo resets PATH);"
    echo "provision: run \`sudo make setup\` once to link ${missing[*]} into $launcher_dir,"
    echo "provision: or use $venv/bin/fabric-lab meanwhile."
    return 0
  fi
  mkdir -p "$launcher_dir"
  for cmd in "${missing[@]}"; do
    ln -sfn "$venv/bin/$cmd" "$launcher_dir/$cmd"
    linked+=("$cmd")
  done
  echo "provision: linked ${linked[*]} into $launcher_dir (on sudo's PATH)"
}

# The first directory on the way to the checkout that users other than its owner cannot enter
# (no o+x; a clone in a home directory of mode 0700 or 0750, or in `mktemp -d`), or nothing.
closed_ancestor() {
  local dir=$repo mode
  while :; do
    mode=$(stat -c %a "$dir")
    if (( (8#$mode & 1) == 0 )); then
      echo "$dir"
      return 0
    fi
    [ "$dir" = / ] && return 0
    dir=$(dirname "$dir")
  done
}

# The linked commands run the checkout's .venv: from a checkout other users cannot reach, only
# its owner and root can run them. Said, not changed: the directory's mode is its owner's choice.
note_reach() {
  local closed
  closed=$(closed_ancestor)
  [ -z "$closed" ] && return 0
  echo "provision: note: $closed is mode $(stat -c %a "$closed"): users other than" \
       "$(stat -c %U "$closed") cannot run the lab from $repo (root and its owner can);" \
       "\`chmod o+x $closed\` or a clone in a directory others can enter lets them"
}

# Wireshark dissectors for the lab's own headers (reorder tag, INT; tools/wireshark): into the Lua
# plugin folder tshark reads, for every user as root, else for the user running setup.
install_dissectors() {
  local src="$repo/tools/wireshark/fabric_lab.lua" which dir
  if ! command -v tshark >/dev/null; then
    echo "provision: no tshark; skipping the Wireshark dissectors" >&2
    return 0
  fi
  which="Personal Lua Plugins"
  [ "$(id -u)" -eq 0 ] && which="Global Lua Plugins"
  dir=$(tshark -G folders 2>/dev/null | sed -n "s/^$which:[[:space:]]*//p")
  if [ -z "$dir" ]; then
    echo "provision: tshark names no '$which' folder; skipping the Wireshark dissectors" >&2
    return 0
  fi
  cmp -s "$src" "$dir/fabric_lab.lua" && return 0
  if ! install -D -m 0644 "$src" "$dir/fabric_lab.lua" 2>/dev/null; then
    echo "provision: cannot write $dir; load the dissectors with" \
         "tshark -X lua_script:$src" >&2
    return 0
  fi
  echo "provision: Wireshark dissectors for the reorder tag and INT in $dir"
}

# The native pipelines of the lab's programs (p4switch/native.py), kept in the compile cache of
# the user running setup: switches started with --pipeline auto (the default) run them. Quick
# when they are already built; a program whose build fails runs as Python (the reason is shown).
build_native_pipelines() {
  local programs=("$repo"/p4src/*.p4) missing=()
  local p
  for p in "${programs[@]}"; do
    "$venv/bin/python" -c 'import sys; from p4switch.compiler import compile_program
from p4switch.native import kept
sys.exit(0 if kept(compile_program(sys.argv[1]).native_source) else 1)' "$p" 2>/dev/null \
      || missing+=("$p")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  echo "provision: building the native pipelines of ${#missing[@]} lab programs (once, about half a minute each)"
  printf '%s\0' "${missing[@]}" | xargs -0 -P "$(nproc)" -n 1 "$venv/bin/p4switch-compile" --native \
    || echo "provision: a native pipeline did not build; those programs run as Python" >&2
}

# What a switch on the C data plane (p4switch/cdp, the default where a C compiler is present)
# loads for each lab program: the program's C and the loop's libraries, kept in the same cache,
# so the first switch to load a program builds nothing. Seconds when already built; where they
# cannot be built the switches run the native or Python pipeline and say why.
build_c_data_plane() {
  local programs=("$repo"/p4src/*.p4)
  echo "provision: the C data plane of ${#programs[@]} lab programs (built once, then kept)"
  printf '%s\0' "${programs[@]}" | xargs -0 -P "$(nproc)" -n 1 "$venv/bin/p4switch-compile" --c \
    || echo "provision: a program's C data plane did not build; its switches run another pipeline" >&2
}

# The traffic workers' C loops (traffic/c: the paced sender and receiver), kept in the same
# cache, so the first run's workers build nothing. Where they cannot be built the workers use
# their Python loops.
build_traffic_loops() {
  "$venv/bin/python" -m traffic paced build >/dev/null \
    || echo "provision: the traffic workers' C loops did not build; they run in Python" >&2
}

# The collective engine (jobs/ccl/c: every GPU's rank in `perf` and `train`), kept in the same
# cache, so the first job builds nothing.
build_collective_engine() {
  "$venv/bin/python" -m jobs.ccl.native \
    || echo "provision: the collective engine did not build; perf and train cannot run" >&2
}

install_apt
install_dissectors
install_python
install_launchers
note_reach
build_c_data_plane
build_traffic_loops
build_collective_engine
build_native_pipelines
echo "provision: ready ($venv)"
