#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs clang-tidy with the root .clang-tidy over every translation unit of a build's
# compile_commands.json (the generated ones aside): its checks, and clang's own errors and warnings
# under the build's flags, so the whole tree (app, ui, tests too) is held to what clang says without
# a second build. Lists every finding and fails on any.
# Usage: check-tidy.sh BUILD_DIR [JOBS [REGEX]]   (JOBS: default the number of processors; REGEX:
# only the files whose path matches it, e.g. 'core/policy/')
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "$1" && pwd)"
jobs=${2:-$(nproc)}
only=${3:-}
command -v clang-tidy >/dev/null || { echo "clang-tidy is missing: bash installer/deps.sh --test" >&2; exit 1; }
[[ -f $build/compile_commands.json ]] || {
    echo "$build/compile_commands.json is missing: configure with -DCMAKE_EXPORT_COMPILE_COMMANDS=ON" >&2
    exit 1
}
# Every check the configuration enables has its reason in a comment there.
checks=$(sed -n "s/^Checks: *'\(.*\)'$/\1/p" "$root/.clang-tidy" | tr ',' '\n' | grep -v '^-')
for check in $checks; do
    grep -qF "# $check " "$root/.clang-tidy" || { echo ".clang-tidy: $check has no reason comment" >&2; exit 1; }
done
mapfile -t files < <(python3 -c '
import json, re, sys
root, build, only = sys.argv[1], sys.argv[2], sys.argv[3]
for entry in json.load(open(build + "/compile_commands.json")):
    f = entry["file"]
    if f.startswith(root + "/") and not f.startswith(build + "/") and re.search(only, f):
        print(f)' "$root" "$build" "$only" | sort -u)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
started=$SECONDS
printf '%s\n' "${files[@]}" | xargs -P "$jobs" -I{} sh -c \
    'clang-tidy -p "$0" --quiet "$1" >"$2/$(echo "$1" | tr / _).log" 2>&1 || echo "$1" >>"$2/failed"' \
    "$build" {} "$work"
bad=0
if [[ -f $work/failed ]]; then
    while read -r f; do
        bad=$((bad + 1))
        grep -v -E '^[0-9]+ (warnings?|errors?)( and [0-9]+ (warnings?|errors?))? generated\.$|^Suppressed [0-9]+ warnings|^Use -header-filter|^Error while processing' \
            "$work/$(echo "$f" | tr / _).log"
    done < <(sort "$work/failed")
fi
echo "${#files[@]} translation units checked in $((SECONDS - started)) s ($jobs jobs), $bad with findings"
[[ $bad -eq 0 ]] || {
    echo "fix them, or where a finding is wrong add NOLINTNEXTLINE(check) with the reason (see .clang-tidy)" >&2
    exit 1
}
