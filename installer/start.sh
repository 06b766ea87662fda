#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Airlock's main job on this machine: installs what is missing, builds, and opens the desktop
# console, which starts this user's daemon on demand. Without a display (a server, a container)
# it starts the daemon instead and shows the boundary at work from the CLI: create a sandbox, run
# a command with live output, show what it could not do, delete it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash installer/deps.sh
bash installer/build.sh
bin=build/bin

if [[ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" && "${1:-}" != "--cli" ]]; then
  echo "starting the Airlock console (build/bin/airlock; the daemon starts with it)"
  exec "$bin/airlock"
fi

ctl=$bin/airlockctl
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
[[ "${1:-}" == "--cli" ]] || say "no display here: the console needs an X11 or Wayland session (run build/bin/airlock there); the CLI meanwhile"

say "airlockctl create (starts airlockd on demand)"
sb=$("$ctl" create --name "demo-$$" --pids 128 --exec-timeout 60s)
trap '"$ctl" rm "$sb" >/dev/null 2>&1 || true' EXIT
"$ctl" info "$sb"

say "live output from inside $sb"
"$ctl" exec "$sb" -- sh -c 'for i in 1 2 3 4 5; do echo "[$i/5] $(date +%T) $(hostname) uid=$(id -u) cwd=$(pwd)"; sleep 0.3; done'

say "what the boundary refuses"
"$ctl" exec "$sb" -- bash -c '
  echo "host home:     $(ls /home 2>&1)"
  echo "system files:  $(touch /usr/bin/x 2>&1)"
  echo "network:       $( (exec 3<>/dev/tcp/203.0.113.1/80) 2>&1 | tail -1)"
  echo "processes:     $(ls /proc | grep -c "^[0-9]") visible in the sandbox"
  echo "privileges:    $(grep -E "CapEff|NoNewPrivs" /proc/self/status | tr -s "\t\n" "  ")"' || true

say "airlockctl rm $sb"
"$ctl" rm "$sb"
trap - EXIT
"$ctl" ls
say "the daemon keeps running for this user: airlockctl and build/bin/airlock talk to it"
