#!/usr/bin/env bash
# Builds the reference P4 toolchain from source, pinned to the versions the lab is tested with:
#   PI        f96af95e   P4Runtime server library (--with-proto)
#   BMv2      1.15.5 (9674187f)   simple_switch_grpc (P4Runtime through PI, runtime CLI over
#             Thrift), simple_switch, simple_switch_CLI; built fast: -O2, --disable-logging-macros,
#             --disable-elogger (BMv2's docs/performance.md)
#   p4c       1.2.5.16 (34b86e9b)   p4c-bm2-ss and the p4c driver, BMv2 back end only
# Build dependencies come from apt (Debian 12, Ubuntu 22.04/24.04); sources from GitHub. About 40
# minutes on 2 cores, 3 GB of disk. Idempotent: what is installed at the pinned version is kept.
#
#   sudo scripts/build_p4lang.sh [options]
#     --prefix DIR    install prefix (default $P4LANG_PREFIX, else /usr/local)
#     --workdir DIR   where sources are fetched and built (default $P4LANG_WORKDIR, else
#                     /var/tmp/p4lang-build); kept, so an interrupted build resumes
#     --jobs N        parallel compile jobs (default: cores, fewer if memory is short)
#     --no-deps       do not install build dependencies (they must be installed already)
#     --force         rebuild even what is installed at the pinned version
#     --dry-run       print what would be done, change nothing
#     -h, --help      this text
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
APT_WAIT_WHO=build_p4lang
# shellcheck source=apt_wait.sh source-path=SCRIPTDIR
. "$here/apt_wait.sh"

PI_URL=https://github.com/p4lang/PI.git
PI_COMMIT=f96af95e090619491e3abf2df69df340c2c9cb46
BMV2_URL=https://github.com/p4lang/behavioral-model.git
BMV2_COMMIT=9674187f610c81878e3586f9a1746dcc7f903114
BMV2_VERSION=1.15.5
P4C_URL=https://github.com/p4lang/p4c.git
P4C_COMMIT=34b86e9bacb932c799aaf1b83495ce1e386ea047
P4C_VERSION=1.2.5.16

# From the projects' own install notes and CI (BMv2 install_deps.sh, PI README, p4c README and
# tools/ci-build.sh), all from the distribution: Thrift, nanomsg, Protobuf and gRPC included.
DEPS_COMMON=(git ca-certificates build-essential autoconf automake libtool libtool-bin pkg-config
             cmake python3 python3-dev)
DEPS_PI=(libprotobuf-dev libprotoc-dev protobuf-compiler libgrpc++-dev libgrpc-dev
         protobuf-compiler-grpc libboost-dev libboost-system-dev libboost-thread-dev)
DEPS_BMV2=(libgmp-dev libpcap-dev libboost-program-options-dev libboost-filesystem-dev
           libevent-dev libssl-dev libjsoncpp-dev libxxhash-dev libnanomsg-dev libthrift-dev
           thrift-compiler python3-thrift python3-six)
DEPS_P4C=(bison flex libfl-dev libgc-dev libboost-iostreams-dev libboost-graph-dev)

prefix=${P4LANG_PREFIX:-/usr/local}
workdir=${P4LANG_WORKDIR:-/var/tmp/p4lang-build}
jobs=""
deps=1
force=0
dry=0

say() { echo "build_p4lang: $*"; }
die() { echo "build_p4lang: $*" >&2; exit 1; }
usage() { sed -n '2,20s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }

# run CMD...: print it; run it unless this is a dry run.
run() {
  echo "+ $*"
  [ "$dry" -eq 1 ] || "$@"
}

# run_in DIR CMD...: the same, in DIR.
run_in() {
  local dir=$1
  shift
  echo "+ (cd $dir && $*)"
  [ "$dry" -eq 1 ] || (cd "$dir" && "$@")
}

while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) [ $# -ge 2 ] || die "--prefix needs a directory"; prefix=$2; shift ;;
    --prefix=*) prefix=${1#*=} ;;
    --workdir) [ $# -ge 2 ] || die "--workdir needs a directory"; workdir=$2; shift ;;
    --workdir=*) workdir=${1#*=} ;;
    --jobs|-j) [ $# -ge 2 ] || die "--jobs needs a number"; jobs=$2; shift ;;
    --jobs=*) jobs=${1#*=} ;;
    --no-deps) deps=0 ;;
    --force) force=1 ;;
    --dry-run) dry=1 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
  shift
done

case "$prefix" in /*) ;; *) die "--prefix must be an absolute path, not '$prefix'" ;; esac
case "$workdir" in /*) ;; *) die "--workdir must be an absolute path, not '$workdir'" ;; esac
if [ -z "$jobs" ]; then
  # p4c's larger units take about 1.5 GB each to compile: no more jobs than memory allows.
  cores=$(nproc)
  mem_kb=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo 2>/dev/null || echo 0)
  by_mem=$(( mem_kb / 1500000 ))
  jobs=$(( by_mem < cores ? by_mem : cores ))
  [ "$jobs" -ge 1 ] || jobs=1
fi
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || die "--jobs must be a positive number, not '$jobs'"

stamps="$prefix/share/p4lang-build"
export PATH="$prefix/bin:$PATH"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"

# installed NAME COMMIT FILE...: true when NAME was installed here at COMMIT and its files (relative
# to the prefix) are still there.
installed() {
  local name=$1 commit=$2 file
  shift 2
  [ "$force" -eq 0 ] && [ -f "$stamps/$name" ] && [ "$(cat "$stamps/$name")" = "$commit" ] || return 1
  for file in "$@"; do
    [ -e "$prefix/$file" ] || return 1
  done
}

mark_installed() {
  run mkdir -p "$stamps"
  if [ "$dry" -eq 0 ]; then echo "$2" > "$stamps/$1"; fi
}

# fetch NAME URL COMMIT: a checkout of COMMIT in $workdir/NAME (kept if already there).
fetch() {
  local name=$1 url=$2 commit=$3 dir="$workdir/$1"
  if [ -d "$dir/.git" ] && [ "$(git -C "$dir" rev-parse HEAD 2>/dev/null)" = "$commit" ]; then
    say "$name: reusing the checkout of ${commit:0:8} in $dir"
    return 0
  fi
  say "$name: fetching ${commit:0:8} from $url"
  run rm -rf "$dir"
  run mkdir -p "$dir"
  run git -C "$dir" init -q
  run git -C "$dir" remote add origin "$url"
  run git -C "$dir" fetch -q --depth 1 origin "$commit"
  run git -C "$dir" -c advice.detachedHead=false checkout -q FETCH_HEAD
}

install_deps() {
  local pkg missing=()
  for pkg in "${DEPS_COMMON[@]}" "${DEPS_PI[@]}" "${DEPS_BMV2[@]}" "${DEPS_P4C[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if [ "${#missing[@]}" -eq 0 ]; then
    say "build dependencies: all installed"
    return 0
  fi
  [ "$deps" -eq 1 ] || die "missing build dependencies (and --no-deps): ${missing[*]}"
  [ "$dry" -eq 1 ] || [ "$(id -u)" -eq 0 ] || die "missing build dependencies: ${missing[*]}; run as root (sudo) to install them"
  say "installing build dependencies: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  if [ "$dry" -eq 1 ]; then
    echo "+ apt-get update -qq && apt-get install -y -qq --no-install-recommends ${missing[*]}"
    return 0
  fi
  apt_get update -qq
  apt_get install -y -qq --no-install-recommends "${missing[@]}"
}

# As root: the linker cache learns the new libraries (in /usr/local/lib with the default prefix).
refresh_linker_cache() {
  if [ "$dry" -eq 0 ] && [ "$(id -u)" -eq 0 ] && command -v ldconfig >/dev/null; then ldconfig; fi
}

# Libraries from $prefix are found through the run path, wherever the prefix is.
link_flags="LDFLAGS=-L$prefix/lib -Wl,-rpath,$prefix/lib"

build_pi() {
  if installed PI "$PI_COMMIT" lib/libpi.so lib/libpigrpcserver.so; then
    say "PI: ${PI_COMMIT:0:8} already installed in $prefix"
    return 0
  fi
  fetch PI "$PI_URL" "$PI_COMMIT"
  local dir="$workdir/PI"
  say "PI: fetching its submodules (p4runtime, gnmi, googletest, uthash)"
  if ! run git -C "$dir" submodule update -q --init --recursive --depth 1; then
    run git -C "$dir" submodule update -q --init --recursive
  fi
  say "PI: building (a few minutes)"
  run_in "$dir" ./autogen.sh
  run_in "$dir" ./configure --prefix="$prefix" --with-proto --without-internal-rpc --without-cli \
    --without-bmv2 "CPPFLAGS=-I$prefix/include" "$link_flags"
  run_in "$dir" make -j"$jobs"
  run_in "$dir" make install
  refresh_linker_cache
  mark_installed PI "$PI_COMMIT"
}

build_bmv2() {
  if installed behavioral-model "$BMV2_COMMIT" bin/simple_switch_grpc bin/simple_switch bin/simple_switch_CLI; then
    say "BMv2: $BMV2_VERSION (${BMV2_COMMIT:0:8}) already installed in $prefix"
    return 0
  fi
  fetch behavioral-model "$BMV2_URL" "$BMV2_COMMIT"
  say "BMv2: building (about 15 minutes on 2 cores)"
  local dir="$workdir/behavioral-model"
  run_in "$dir" ./autogen.sh
  # --with-thrift also reaches simple_switch_grpc's own configure: its runtime CLI port serves the
  # queue commands that P4Runtime has none for (the lab's PFC emulation).
  run_in "$dir" ./configure --prefix="$prefix" --with-pi --with-thrift --disable-logging-macros \
    --disable-elogger "CXXFLAGS=-O2" "CFLAGS=-O2" "CPPFLAGS=-I$prefix/include" "$link_flags"
  run_in "$dir" make -j"$jobs"
  run_in "$dir" make install
  refresh_linker_cache
  mark_installed behavioral-model "$BMV2_COMMIT"
}

build_p4c() {
  if installed p4c "$P4C_COMMIT" bin/p4c-bm2-ss share/p4c/p4include/v1model.p4; then
    say "p4c: $P4C_VERSION (${P4C_COMMIT:0:8}) already installed in $prefix"
    return 0
  fi
  fetch p4c "$P4C_URL" "$P4C_COMMIT"
  say "p4c: building the BMv2 back end (about 25 minutes on 2 cores)"
  local dir="$workdir/p4c"
  # Protobuf, Abseil and the Boehm GC at the versions p4c's CMake fetches and its CI tests (the
  # distributions' Protobuf 3.21 ships no CMake package on Debian 12); a unity build, as in its CI.
  run cmake -S "$dir" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" \
    -DCMAKE_UNITY_BUILD=ON -DENABLE_BMV2=ON -DENABLE_EBPF=OFF -DENABLE_UBPF=OFF -DENABLE_DPDK=OFF \
    -DENABLE_P4TC=OFF -DENABLE_P4FMT=OFF -DENABLE_P4TEST=OFF -DENABLE_P4C_GRAPHS=OFF \
    -DENABLE_TEST_TOOLS=OFF -DENABLE_GTESTS=OFF -DENABLE_DOCS=OFF -DENABLE_WERROR=OFF
  run cmake --build "$dir/build" -j "$jobs"
  run cmake --install "$dir/build"
  mark_installed p4c "$P4C_COMMIT"
}

# The installed programs report the pinned versions.
check_versions() {
  local bmv2 p4c
  [ "$dry" -eq 0 ] || return 0
  bmv2=$("$prefix/bin/simple_switch_grpc" --version 2>&1 || true)
  p4c=$("$prefix/bin/p4c-bm2-ss" --version 2>&1 || true)
  case "$bmv2" in
    "$BMV2_VERSION-${BMV2_COMMIT:0:8}"*) ;;
    *) die "simple_switch_grpc reports '$bmv2', expected $BMV2_VERSION-${BMV2_COMMIT:0:8}" ;;
  esac
  case "$p4c" in
    *"$P4C_VERSION (SHA: ${P4C_COMMIT:0:7}"*) ;;
    *) die "p4c-bm2-ss reports '${p4c//$'\n'/ }', expected $P4C_VERSION (SHA: ${P4C_COMMIT:0:7}...)" ;;
  esac
  say "simple_switch_grpc $bmv2, p4c-bm2-ss $P4C_VERSION (${P4C_COMMIT:0:8}) in $prefix/bin"
}

if [ "$dry" -eq 0 ] && ! { mkdir -p "$prefix" 2>/dev/null && [ -w "$prefix" ]; }; then
  die "cannot write to $prefix: run as root (sudo), or choose a writable --prefix"
fi
if ! command -v dpkg-query >/dev/null; then
  die "this script installs its build dependencies with apt (Debian, Ubuntu)"
fi
say "building BMv2 $BMV2_VERSION, PI ${PI_COMMIT:0:8} and p4c $P4C_VERSION into $prefix ($jobs jobs,"\
    "sources in $workdir)$([ "$dry" -eq 1 ] && echo '; dry run')"
step=""
on_exit() {
  local rc=$?
  if [ "$rc" -ne 0 ] && [ -n "$step" ] && [ "$dry" -eq 0 ]; then
    echo "build_p4lang: failed while $step (exit $rc); the lab runs on p4switch meanwhile." >&2
    echo "build_p4lang: the sources stay in $workdir: running this again resumes there." >&2
  fi
}
trap on_exit EXIT
step="installing the build dependencies"; install_deps
run mkdir -p "$workdir"
step="building PI"; build_pi
step="building BMv2"; build_bmv2
step="building p4c"; build_p4c
step="checking the installed versions"; check_versions
step=""
if [ "$prefix" != /usr/local ] && [ "$prefix" != /usr ]; then
  say "$prefix/bin is not on the default PATH: export PATH=\"$prefix/bin:\$PATH\""
  say "(sudo resets PATH: use --prefix /usr/local for \`sudo fabric-lab --target bmv2\`)"
fi
if [ "$dry" -eq 1 ]; then
  say "dry run: nothing was changed"
else
  say "done: \`fabric-lab ... --target bmv2\` runs on this BMv2"
fi
