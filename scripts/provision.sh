#!/usr/bin/env bash
# Installs what AI Fabric Lab needs on Debian 12 or Ubuntu 22.04/24.04: Debian packages (Mininet,
# iproute2, tools the tests use) and a pinned Python environment in .venv with the project's
# commands. Idempotent: a second run with nothing changed does nothing. Used by `make setup` and
# by the Vagrantfile.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv="$repo/.venv"
stamp="$venv/.setup-stamp"

apt_packages=(
  mininet openvswitch-switch iproute2 iputils-ping ethtool net-tools psmisc
  tcpdump tshark python3 python3-venv python3-dev gcc make shellcheck ruby
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
  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
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

install_apt
install_python
echo "provision: ready ($venv)"
