#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs one libFuzzer target for a bounded time from its seed corpus (copied to a scratch directory:
# the repository is never written) and fails on any crash, leak, hang, ASan or UBSan report.
# Usage: run.sh FUZZER CORPUS_DIR SECONDS [DICTIONARY]
set -euo pipefail
fuzzer=$1 corpus=$2 seconds=$3 dict=${4:-}
name=$(basename "$fuzzer")
work=$(mktemp -d "${TMPDIR:-/tmp}/airlock-$name.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/corpus" "$work/artifacts"
cp -r "$corpus"/. "$work/corpus/"
args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=8192 -print_final_stats=1
    -artifact_prefix="$work/artifacts/")
[[ -z $dict ]] || args+=(-dict="$dict")
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
echo "$name: $(find "$corpus" -type f | wc -l) seeds, ${seconds} s"
if ! "$fuzzer" "${args[@]}" "$work/corpus" >"$work/log" 2>&1; then
    # The report (what broke, and where), then the input that broke it, to save and replay with
    # FUZZER FILE.
    grep -v -E '^#[0-9]+\s+(NEW|REDUCE|pulse|INITED|RELOAD)' "$work/log" \
        | awk '/^Shadow bytes around the buggy address/ { skip = 1 } /==ABORTING/ { skip = 0 } !skip' | head -n 150
    for crash in "$work"/artifacts/*; do
        [[ -e $crash ]] || continue
        echo "FAIL: $name: input $(basename "$crash") (base64):"
        base64 -w 100 "$crash" | head -n 40
    done
    echo "FAIL: $name found a crash, leak, hang or sanitizer report (see above)" >&2
    exit 1
fi
grep -E '^(Done|stat::number_of_executed_units|stat::new_units_added)' "$work/log" || true
