#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what is missing, builds with warnings as errors and runs the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash installer/deps.sh --test
bash installer/build.sh -DAIRLOCK_WERROR=ON
# The official MCP SDK client that tst_mcp drives airlockctl mcp with (versions pinned by the lock).
[[ -f tests/mcp/node_modules/@modelcontextprotocol/sdk/package.json ]] || npm ci --prefix tests/mcp --no-audit --no-fund
cd build
ctest --output-on-failure --timeout 600 -j1
