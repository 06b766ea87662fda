#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Configures and builds into ./build (extra arguments go to cmake's configure step). Installs go to
# /usr unless a -DCMAKE_INSTALL_PREFIX says otherwise, as the Debian package wants.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr "$@" >/dev/null
cmake --build build -j"$(nproc)"
