#!/usr/bin/env bash
# Puts BMv2 (simple_switch_grpc) and p4c on the lab VM, for `--target bmv2`. Without them the lab
# runs on p4switch, its built-in target (the default everywhere).
#
# By default it installs p4lang's Ubuntu packages. Those do not always install (the signing key of
# their repository expires now and then); the VM then comes up on p4switch, says so, and this
# script still succeeds so that provisioning goes on. The opt-in alternative builds the versions
# the lab is tested with from source (scripts/build_p4lang.sh, about 40 minutes on 2 cores).
#
#   install_p4lang.sh [--packages|--source|--none]   (default: $FABRIC_LAB_P4LANG, else packages)
#   FABRIC_LAB_P4LANG   packages | source | none
#   P4LANG_REPO_URL     the package repository (default: p4lang's on the openSUSE build service
#                       for this Ubuntu release; setting it skips the Ubuntu release check)
#   P4LANG_PREFIX       install prefix of the source build (see build_p4lang.sh)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
APT_WAIT_WHO=install_p4lang
# shellcheck source=apt_wait.sh source-path=SCRIPTDIR
. "$here/apt_wait.sh"

list=/etc/apt/sources.list.d/home:p4lang.list
keyring=/etc/apt/trusted.gpg.d/home_p4lang.gpg

say() { echo "install_p4lang: $*"; }

usage() {
  sed -n '2,15s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
}

# The lab works without BMv2: say what happened and how to get BMv2, then succeed.
fall_back() {
  say "$1"
  say "BMv2 is not installed: the lab VM is coming up on p4switch, the lab's built-in P4 target"
  say "(the default: every experiment, the demo and the tests run on it; --target bmv2 is off)."
  say "For BMv2 and p4c, build the tested versions from source (about 40 minutes on 2 cores):"
  say "  sudo bash scripts/build_p4lang.sh     (or: FABRIC_LAB_P4LANG=source vagrant provision)"
  exit 0
}

# Removes what a failed package install added, so later `apt-get update` runs do not trip over a
# repository whose key has expired.
forget_repository() {
  rm -f "$list" "$keyring"
}

# Expiry (seconds since the epoch) of the primary key in a binary keyring; empty if it never expires.
key_expiry() {
  gpg --batch --show-keys --with-colons "$1" 2>/dev/null | awk -F: '$1 == "pub" {print $7; exit}'
}

install_packages() {
  local id="" version="" repo tmp key expires
  if [ -r /etc/os-release ]; then
    # shellcheck source=/dev/null
    id=$(. /etc/os-release && echo "$ID")
    # shellcheck source=/dev/null
    version=$(. /etc/os-release && echo "${VERSION_ID:-}")
  fi
  repo=${P4LANG_REPO_URL:-}
  if [ -z "$repo" ]; then
    case "$id:$version" in
      ubuntu:22.04|ubuntu:24.04) ;;
      *) fall_back "p4lang publishes packages for Ubuntu 22.04 and 24.04, not ${id:-unknown} ${version}." ;;
    esac
    repo="https://download.opensuse.org/repositories/home:/p4lang/xUbuntu_${version}"
  fi
  export DEBIAN_FRONTEND=noninteractive
  if ! command -v curl >/dev/null || ! command -v gpg >/dev/null; then
    apt_get update -qq || fall_back "apt-get update failed."
    apt_get install -y -qq --no-install-recommends curl gnupg ca-certificates \
      || fall_back "could not install curl and gnupg."
  fi
  # The key and a keyring of gpg's own in a scratch directory: root's ~/.gnupg stays untouched.
  tmp=$(mktemp -d)
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp'" EXIT
  export GNUPGHOME="$tmp/gnupg"
  mkdir -m 0700 "$GNUPGHOME"
  key="$tmp/Release.key"
  say "fetching the signing key of $repo"
  if ! curl -fsSL --retry 2 --max-time 60 "$repo/Release.key" -o "$key"; then
    fall_back "could not fetch the repository's signing key ($repo/Release.key)."
  fi
  if ! gpg --batch --dearmor < "$key" > "$key.gpg" 2>/dev/null || [ ! -s "$key.gpg" ]; then
    fall_back "the repository's signing key is not a usable OpenPGP key."
  fi
  expires=$(key_expiry "$key.gpg")
  if [ -n "$expires" ] && [ "$expires" -le "$(date +%s)" ]; then
    fall_back "the signing key of p4lang's repository expired on $(date -u -d "@$expires" +%F); apt would reject it."
  fi
  install -m 0644 "$key.gpg" "$keyring"
  echo "deb $repo/ /" > "$list"
  # An expired or wrong key makes apt reject the repository: update fails, or the packages are
  # not found by install.
  if ! apt_get update -qq; then
    forget_repository
    fall_back "apt rejected p4lang's repository (its signing key may have expired)."
  fi
  if ! apt_get install -y -qq p4lang-bmv2 p4lang-p4c; then
    forget_repository
    apt_get update -qq || true
    fall_back "p4lang's packages did not install."
  fi
  if ! command -v simple_switch_grpc >/dev/null || ! command -v p4c-bm2-ss >/dev/null; then
    fall_back "p4lang's packages installed, but simple_switch_grpc or p4c-bm2-ss is missing."
  fi
  say "BMv2 $(simple_switch_grpc --version 2>/dev/null || echo '?') and p4c installed from p4lang's packages"
}

mode=${FABRIC_LAB_P4LANG:-packages}
while [ $# -gt 0 ]; do
  case "$1" in
    --packages) mode=packages ;;
    --source) mode=source ;;
    --none) mode=none ;;
    -h|--help) usage; exit 0 ;;
    *) echo "install_p4lang: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

case "$mode" in
  none)
    say "skipped (FABRIC_LAB_P4LANG=none): the lab runs on p4switch, its built-in P4 target"
    exit 0 ;;
  packages|source) ;;
  *) echo "install_p4lang: FABRIC_LAB_P4LANG must be packages, source or none, not '$mode'" >&2
     exit 2 ;;
esac

if command -v simple_switch_grpc >/dev/null && command -v p4c-bm2-ss >/dev/null; then
  say "BMv2 and p4c already installed ($(command -v simple_switch_grpc))"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install_p4lang: run as root (sudo)" >&2
  exit 1
fi
if [ "$mode" = source ]; then
  exec bash "$here/build_p4lang.sh"
fi
install_packages
