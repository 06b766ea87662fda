#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Formats every C++ file of the tree with its .clang-format (what tests/style/check-format.sh checks).
set -euo pipefail
cd "$(dirname "$0")/.."
find app core ui tests -name node_modules -prune -o \( -name '*.cpp' -o -name '*.h' \) -print0 | xargs -0 clang-format -i
