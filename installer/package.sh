#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Debian package, build/package/airlock_VERSION_ARCH.deb; install it with
# sudo apt install ./build/package/airlock_*.deb
set -euo pipefail
cd "$(dirname "$0")/.."
bash installer/deps.sh
bash installer/build.sh -DCMAKE_INSTALL_PREFIX=/usr
(cd build && cpack -G DEB >/dev/null)
ls build/package/airlock_*.deb
