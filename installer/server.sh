#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs Airlock on a server for remote clients: installs what is missing (apt), builds, installs
# under PREFIX (default ~/.local), and runs airlockd --listen ADDR:PORT as a systemd user service
# that starts at boot (lingering). Prints the address and certificate fingerprint clients pin.
# Usage: bash installer/server.sh [ADDR:PORT]    (default 0.0.0.0:7443)
set -euo pipefail
listen=${1:-0.0.0.0:7443}
cd "$(dirname "$0")/.."
prefix=${PREFIX:-$HOME/.local}
config=${XDG_CONFIG_HOME:-$HOME/.config}
data=${XDG_DATA_HOME:-$HOME/.local/share}

bash installer/deps.sh
bash installer/build.sh -DCMAKE_INSTALL_PREFIX="$prefix"
cmake --install build >/dev/null
mkdir -p "$config/airlock"
echo "AIRLOCKD_OPTIONS=--listen $listen" >"$config/airlock/airlockd.env"

if systemctl --user show-environment >/dev/null 2>&1; then
  loginctl enable-linger "$(id -un)" 2>/dev/null || echo "note: lingering not enabled; airlockd stops when you log out"
  systemctl --user daemon-reload
  systemctl --user enable airlockd.socket airlockd.service >/dev/null
  systemctl --user restart airlockd.service
  echo "airlockd runs as a systemd user service (systemctl --user status airlockd; logs: journalctl --user -u airlockd)"
else
  echo "no systemd user manager here: starting airlockd in the background instead"
  if ! "$prefix/bin/airlockctl" --no-autostart ls >/dev/null 2>&1; then
    setsid nohup "$prefix/bin/airlockd" --listen "$listen" >/dev/null 2>&1 &
  else
    echo "note: airlockd already runs; restart it with --listen $listen if it does not listen yet"
  fi
fi

cert="$data/airlock/tls/cert.pem"
for _ in $(seq 100); do [[ -s $cert ]] && break; sleep 0.1; done
[[ -s $cert ]] || { echo "airlockd did not start; see ${XDG_STATE_HOME:-$HOME/.local/state}/airlock/airlockd.log" >&2; exit 1; }
fingerprint=$(openssl x509 -in "$cert" -noout -fingerprint -sha256 | cut -d= -f2 | tr -d : | tr 'A-F' 'a-f')
host=${listen%:*}
port=${listen##*:}
if [[ $host == 0.0.0.0 || $host == "[::]" ]]; then host=$(hostname -I | awk '{print $1}'); fi
cat <<MSG

airlockd listens on $listen (TLS 1.3). On each client:
  airlockctl hosts add NAME 'wss://$host:$port#sha256=$fingerprint' --token-file TOKEN
with TOKEN a file holding what this prints (once per client):
  $prefix/bin/airlockd token create --name NAME
MSG
