#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The tree is formatted with its own .clang-format: lists every file that is not, with the first
# lines clang-format would change, and fails. Fix with: installer/format.sh
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
command -v clang-format >/dev/null || { echo "clang-format is missing: apt install clang-format" >&2; exit 1; }
mapfile -t files < <(find app core ui tests -name node_modules -prune -o \( -name '*.cpp' -o -name '*.h' \) -print | sort)
bad=0
for f in "${files[@]}"; do
    if ! out=$(clang-format --dry-run --Werror "$f" 2>&1); then
        bad=$((bad + 1))
        echo "$out" | head -n 6
    fi
done
echo "${#files[@]} files checked, $bad not formatted"
[[ $bad -eq 0 ]] || { echo "format them with: bash installer/format.sh" >&2; exit 1; }
