#!/usr/bin/env bash
# Installs BMv2 (simple_switch_grpc) and p4c from p4lang's Ubuntu packages (lab VM only).
# With both on PATH, the lab picks the BMv2 target automatically (`--target auto`).
set -euo pipefail

if command -v simple_switch_grpc >/dev/null && command -v p4c-bm2-ss >/dev/null; then
  echo "install_p4lang: BMv2 and p4c already installed"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install_p4lang: run as root" >&2
  exit 1
fi
# shellcheck source=/dev/null
. /etc/os-release
case "$ID:$VERSION_ID" in
  ubuntu:22.04|ubuntu:24.04) ;;
  *) echo "install_p4lang: p4lang publishes packages for Ubuntu 22.04/24.04, not $ID $VERSION_ID" >&2
     exit 1 ;;
esac
repo="https://download.opensuse.org/repositories/home:/p4lang/xUbuntu_${VERSION_ID}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq curl gnupg ca-certificates
curl -fsSL "$repo/Release.key" | gpg --dearmor > /etc/apt/trusted.gpg.d/home_p4lang.gpg
echo "deb $repo/ /" > /etc/apt/sources.list.d/home:p4lang.list
apt-get update -qq
apt-get install -y -qq p4lang-bmv2 p4lang-p4c
