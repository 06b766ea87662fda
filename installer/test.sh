#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what is missing, builds with warnings as errors and runs the whole suite: the tests and
# the style gates (clang-format; clang-tidy and clang over every file) in ./build, then every fuzz
# target for a while under ASan and UBSan in a clang build of what they need (./build-clang).
set -euo pipefail
cd "$(dirname "$0")/.."
bash installer/deps.sh --test
bash installer/build.sh -DAIRLOCK_WERROR=ON
# The official MCP SDK client that tst_mcp drives airlockctl mcp with (versions pinned by the lock).
[[ -f tests/mcp/node_modules/@modelcontextprotocol/sdk/package.json ]] || npm ci --prefix tests/mcp --no-audit --no-fund
# The official Daytona SDK that tst_daytona drives airlockd --daytona-api with (pinned by its lock).
[[ -f tests/daytona/node_modules/@daytonaio/sdk/package.json ]] || npm ci --prefix tests/daytona --no-audit --no-fund
# The real agent CLIs that tst_agent runs under airlockctl agent run (pinned by their lock too).
[[ -f tests/agents/node_modules/@anthropic-ai/claude-code/package.json && -f tests/agents/node_modules/@openai/codex-linux-x64/package.json ]] \
  || npm ci --prefix tests/agents --no-audit --no-fund
# The fuzz targets and the core they test, compiled by clang with ASan, UBSan and -Werror (app, ui
# and the tests are compiled by clang in style_tidy, without a second build of them).
cmake -S . -B build-clang -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DAIRLOCK_FUZZ=ON -DAIRLOCK_SANITIZE=ON -DAIRLOCK_WERROR=ON -DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" >/dev/null
cmake --build build-clang -j"$(nproc)" --target fuzzers
failed=()
(cd build && ctest --output-on-failure --timeout 600 -j1) || failed+=("the suite (build)")
(cd build-clang && ctest -L fuzz --output-on-failure -j"$(nproc)") || failed+=("the fuzz targets (build-clang)")
if ((${#failed[@]})); then
  echo "FAILED: ${failed[*]}" >&2
  exit 1
fi
