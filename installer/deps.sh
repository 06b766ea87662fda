#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian 12 packages Airlock needs to build, run and test; only what is missing.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config
  qt6-base-dev qt6-base-dev-tools qt6-websockets-dev libqt6sql6-sqlite
  libspdlog-dev libsqlite3-dev libseccomp-dev bubblewrap runsc
  xvfb xauth libgl1-mesa-dev
  curl openssl libssl-dev iproute2 openssh-server openssh-client
  qtkeychain-qt6-dev gnome-keyring dbus-daemon dbus-bin
  libqt6svg6 desktop-file-utils man-db dpkg-dev zsh lintian python3
  qemu-system-x86 qemu-utils mmdebstrap e2fsprogs fuse2fs fuse3
)
# Only for the test command (installer/test.sh --test): the style gate, the clang build and the fuzzers.
if [[ "${1:-}" == "--test" ]]; then
  packages+=(clang clang-format clang-tidy libclang-rt-14-dev)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js and npm, for the MCP client the tests drive airlockctl mcp with: any Node >= 18, Debian's
# or one already installed from elsewhere (which Debian's npm would conflict with).
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  missing+=(nodejs npm)
fi
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
