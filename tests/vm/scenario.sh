#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Runs inside the guest of tests/vm/run.sh, as its systemd service (root), then as a normal user.
# Writes PASS/FAIL/INFO lines and a final DONE to the file (a serial port) named by $1. Every check
# runs even after another failed, so one boot shows all of them.
set -uo pipefail
exec 3>"$1"
exec 1>&3 2>&3
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; }
info() { echo "INFO: $*"; }
oneline() { tr '\n' ' ' | cut -c1-400; }

user=alice
uid=1000
as_user() {
  runuser -u "$user" -- env -C "/home/$user" HOME="/home/$user" XDG_RUNTIME_DIR="/run/user/$uid" \
    DBUS_SESSION_BUS_ADDRESS="unix:path=/run/user/$uid/bus" "$@"
}
# What was running, and what the user's daemon logged: written once, on the first command that hung.
diagnosed=
diagnose() {
  [[ -n $diagnosed ]] && return
  diagnosed=1
  echo "INFO: $*" >&3
  ps -eo pid,ppid,stat,wchan:24,etime,args --forest | grep -v ' \[' | cut -c1-200 | sed 's/^/INFO: ps: /' >&3
  journalctl --no-pager -q -n 60 _UID=$uid _COMM=airlockd 2>&1 | cut -c1-300 | sed 's/^/INFO: journal: /' >&3
}
# Every command has a deadline: one that hangs is a FAIL naming it, and the checks after it still run.
ctl() {
  local started=$SECONDS
  as_user timeout -k 10 120 airlockctl --no-autostart "$@"
  local code=$? # 124 and 137 are also what a command timed out or killed inside says
  if ((SECONDS - started >= 120)); then
    echo "FAIL: airlockctl $* did not finish in 120 s" >&3
    diagnose "after airlockctl $* hung"
  fi
  return $code
}
unit() { as_user timeout 30 systemctl --user show -P "$2" "$1"; }
wait_for() { # SECONDS COMMAND...: true once COMMAND succeeds
  local until=$((SECONDS + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < until)) || return 1
    sleep 0.5
  done
}

# A scenario that hangs anyway says where before run.sh's deadline ends the guest.
(sleep 540 && diagnose "the scenario was still running after 540 s") &
watchdog=$!

[[ $(stat -fc %T /sys/fs/cgroup) == cgroup2fs ]] && pass "cgroup v2 (unified hierarchy)" || fail "not cgroup v2: $(stat -fc %T /sys/fs/cgroup)"
[[ $(cat /proc/1/comm) == systemd ]] && pass "systemd is PID 1" || fail "PID 1 is $(cat /proc/1/comm)"
info "kernel $(uname -r), systemd $(systemctl --version | head -1 | cut -d' ' -f2), booted in $(cut -d' ' -f1 /proc/uptime) s"

# Installed with apt, as a user would (offline: the image holds every dependency).
cp /payload/airlock.deb /root/
if out=$(DEBIAN_FRONTEND=noninteractive apt-get install -y /root/airlock.deb 2>&1); then
  pass "apt install ./airlock.deb: $(dpkg-query -W -f='${Version}' airlock)"
else
  fail "apt install: $(echo "$out" | tail -5 | oneline)"
  echo DONE
  exit 0
fi

# A normal user with a lingering user manager.
useradd -m -s /bin/bash "$user"
loginctl enable-linger "$user"
if wait_for 60 test -S "/run/user/$uid/bus" && wait_for 30 systemctl is-active "user@$uid.service"; then
  pass "user manager of $user is running"
else
  fail "user manager of $user did not start: $(systemctl status "user@$uid.service" 2>&1 | oneline)"
fi

out=$(as_user systemctl --user enable --now airlockd.socket 2>&1) || fail "enable airlockd.socket: $(echo "$out" | oneline)"
[[ $(unit airlockd.socket ActiveState) == active && $(unit airlockd.service ActiveState) == inactive ]] &&
  pass "airlockd.socket listens, airlockd.service not started yet" ||
  fail "socket $(unit airlockd.socket ActiveState), service $(unit airlockd.service ActiveState)"

# Socket activation: --no-autostart, so only systemd can have started the daemon.
if out=$(ctl create --name work --memory 256M --pids 64 2>&1) && [[ $out == work ]]; then
  pass "create --name work --memory 256M --pids 64 as $user"
else
  fail "create as $user: $(echo "$out" | oneline)"
fi
[[ $(unit airlockd.service ActiveState) == active ]] && pass "socket activation started airlockd.service" ||
  fail "airlockd.service is $(unit airlockd.service ActiveState)"
daemon=$(unit airlockd.service MainPID)
service_cg=/sys/fs/cgroup$(unit airlockd.service ControlGroup)
info "airlockd.service: pid $daemon, cgroup $service_cg"
info "cgroup tree: $(cd "$service_cg" 2>/dev/null && find . -type d | sort | oneline)"
out=$(ctl info work 2>&1)
info "info work: $(echo "$out" | grep -E 'memoryBytes|pids|cpu' | oneline)"
grep -Eq 'memoryBytes +256 MiB +cgroup v2 memory' <<<"$out" && grep -Eq 'pids +64 +cgroup v2 pids' <<<"$out" &&
  pass "info: memory and pids enforced by cgroup v2" || fail "info does not name cgroup v2: $(echo "$out" | oneline)"

# The sandbox is a systemd scope of its own beside the daemon's service, its limits the scope's.
scope=$(as_user systemctl --user list-units --plain --no-legend 'airlock-*.scope' | awk '{print $1}' | head -1)
limit_dir=/sys/fs/cgroup$(unit "$scope" ControlGroup)
info "scope $scope: MemoryMax $(unit "$scope" MemoryMax), TasksMax $(unit "$scope" TasksMax), cgroup $limit_dir"
if [[ -n $scope && $(cat "$limit_dir/memory.max") == 268435456 && $(cat "$limit_dir/memory.swap.max") == 0 &&
      $(cat "$limit_dir/pids.max") == 64 ]]; then
  pass "the sandbox runs in $scope: memory.max 268435456, memory.swap.max 0, pids.max 64"
else
  fail "no scope with memory.max 268435456, memory.swap.max 0 and pids.max 64 ($scope, $limit_dir)"
fi
[[ $(sed -n 's/^0:://p' "/proc/$daemon/cgroup") == "$(unit airlockd.service ControlGroup)" ]] &&
  pass "the daemon stays in its service's cgroup" || fail "the daemon's cgroup: $(cat "/proc/$daemon/cgroup")"

# An agent inside cannot reach its cgroup to lift the limit: no /sys, the cgroup namespace hides
# the host's path, and mounting a cgroup2 of its own is refused.
out=$(ctl exec work -- sh -c 'cat /proc/self/cgroup; ls /sys/fs/cgroup 2>&1; mkdir -p /tmp/cg && mount -t cgroup2 none /tmp/cg 2>&1; echo "mount exit $?"' 2>&1)
[[ $out == "0::/"* && $out == *"No such file or directory"* && $out == *"mount exit "[1-9]* && $out != *airlock-*.scope* ]] &&
  pass "inside, the cgroup is out of reach: $(echo "$out" | oneline)" || fail "inside, the cgroup: $(echo "$out" | oneline)"

# A balloon: OOM-killed inside the sandbox; the daemon and the user's session survive.
out=$(ctl exec work -- perl -e '$x = "x" x (768 << 20); print "survived\n"' 2>&1)
code=$?
[[ $code == 137 && $out != *survived* ]] && pass "a 768 MiB balloon is killed (exit 137)" ||
  fail "the balloon: exit $code, $(echo "$out" | oneline)"
oom=$(sed -n 's/^oom_kill //p' "$limit_dir/memory.events" 2>/dev/null)
[[ ${oom:-0} -ge 1 ]] && pass "memory.events of the sandbox: oom_kill $oom" || fail "memory.events: $(cat "$limit_dir/memory.events" 2>&1 | oneline)"
[[ $(unit airlockd.service MainPID) == "$daemon" ]] && pass "the daemon survived (pid $daemon)" || fail "the daemon is now pid $(unit airlockd.service MainPID)"
[[ $(systemctl is-active "user@$uid.service") == active ]] && pass "the user's manager survived" || fail "user@$uid.service is $(systemctl is-active "user@$uid.service")"
out=$(ctl exec work -- echo alive 2>&1)
[[ $out == alive ]] && pass "the sandbox still runs commands" || fail "after the balloon: $(echo "$out" | oneline)"

# Processes: the 65th fork fails inside.
out=$(ctl exec work -- sh -c 'for i in $(seq 100); do sleep 3 & done; wait' 2>&1)
events=$(sed -n 's/^max //p' "$limit_dir/pids.events" 2>/dev/null)
[[ $out == *"fork"* && ${events:-0} -ge 1 ]] && pass "forks beyond pids.max fail (pids.events max $events)" ||
  fail "pids: events ${events:-none}, output $(echo "$out" | oneline)"

# CPU: half a core for a busy loop, throttled by the scope's cpu.max.
if out=$(ctl create --name busy --cpus 0.5 2>&1); then
  bscope=$(as_user systemctl --user list-units --plain --no-legend 'airlock-*.scope' | awk '{print $1}' | grep -v "^$scope$" | head -1)
  bdir=/sys/fs/cgroup$(unit "$bscope" ControlGroup)
  before=$(sed -n 's/^usage_usec //p' "$bdir/cpu.stat")
  ctl exec busy --timeout 4s -- sh -c 'while :; do :; done' >/dev/null 2>&1
  used=$(( $(sed -n 's/^usage_usec //p' "$bdir/cpu.stat") - before ))
  throttled=$(sed -n 's/^nr_throttled //p' "$bdir/cpu.stat")
  [[ $(cat "$bdir/cpu.max") == "50000 100000" && $throttled -ge 1 && $used -le 3000000 ]] &&
    pass "--cpus 0.5: cpu.max 50000 100000, throttled $throttled times, ${used} us of CPU in 4 s" ||
    fail "--cpus 0.5: cpu.max $(cat "$bdir/cpu.max" 2>&1), throttled ${throttled:-?}, used ${used} us in 4 s"
  ctl rm busy >/dev/null 2>&1
else
  fail "create --cpus 0.5: $(echo "$out" | oneline)"
fi

# A sandbox created with no limits is still bounded: memory (half of the guest's, at most 4 GiB)
# and 1 GiB tmpfs, and a workspace of 10 GiB at most (an image; what the disk has beyond the reserve).
if out=$(ctl create --name plain 2>&1); then
  pscope=$(as_user systemctl --user list-units --plain --no-legend 'airlock-*.scope' | awk '{print $1}' | grep -v "^$scope$" | head -1)
  expect=$(( $(getconf _PHYS_PAGES) * $(getconf PAGESIZE) / 2 ))
  ((expect > 4294967296)) && expect=4294967296
  tmp=$(ctl exec plain -- df -B1 --output=size /tmp | tail -1 | tr -d ' ')
  disk=$(ctl info plain | grep -E '^diskBytes' | oneline)
  [[ $(unit "$pscope" MemoryMax) == "$expect" && $tmp == 1073741824 && $disk == *"ext4 image served by fuse2fs (the default"* ]] &&
    pass "a sandbox without limits: MemoryMax $expect, /tmp $tmp bytes, workspace: $disk" ||
    fail "a sandbox without limits: MemoryMax $(unit "$pscope" MemoryMax) (expected $expect), /tmp $tmp, workspace: $disk"
  ctl rm plain >/dev/null 2>&1
else
  fail "create plain: $(echo "$out" | oneline)"
fi

# The workspace's size, for a normal user: an ext4 image served by fuse2fs, as the user (udev
# makes /dev/fuse 0666), full at its size; it outlives a restart of the daemon like its sandbox.
if out=$(ctl create --name disky --disk 64M 2>&1); then
  by=$(ctl info disky | grep -E '^diskBytes' | oneline)
  full=$(ctl exec disky -- dd if=/dev/zero of=/workspace/fill bs=1M count=100 2>&1)
  served=$(ps -o user= -C fuse2fs | sort -u | oneline)
  [[ $by == *"64 MiB"*"ext4 image served by fuse2fs"* && $full == *"No space left on device"* && $served == "$user " ]] &&
    pass "--disk 64M for $user: an ext4 image served by fuse2fs (as $served), full at its size" ||
    fail "--disk 64M for $user: '$by'; dd: $(echo "$full" | oneline); fuse2fs run by '$served'"
  ctl exec disky -- sh -c 'rm /workspace/fill; echo kept > /workspace/note' >/dev/null 2>&1
else
  fail "create --disk 64M: $(echo "$out" | oneline)"
fi

# A restart keeps the sandbox; the next daemon takes it over.
as_user timeout 120 systemctl --user restart airlockd.service
[[ $(ctl exec disky -- cat /workspace/note 2>&1) == kept ]] && pass "its workspace image is served on through the restart" ||
  fail "after the restart, /workspace/note of disky: $(ctl exec disky -- cat /workspace/note 2>&1 | oneline)"
ws=$(ctl info disky | sed -n 's/^workspace: .*(host: \(.*\))$/\1/p')
ctl rm disky >/dev/null 2>&1
# Unmounted lazily: its fuse2fs ends once the sandbox's last process (and its view) is gone.
no_fuse2fs() { ! pgrep -f "fuse2fs $ws.ext4" >/dev/null; }
[[ -n $ws ]] && wait_for 10 no_fuse2fs && [[ ! -e $ws.ext4 ]] && pass "rm disky: its fuse2fs and image are gone" ||
  fail "after rm disky ($ws): $(pgrep -af fuse2fs | oneline) $(ls -d "$ws"* 2>&1 | oneline)"
out=$(ctl exec work -- echo after-restart 2>&1)
[[ $out == after-restart && $(unit airlockd.service MainPID) != "$daemon" ]] &&
  pass "systemctl --user restart airlockd: the sandbox goes on" || fail "after a restart: $(echo "$out" | oneline)"
[[ $(cat "$limit_dir/memory.max" 2>/dev/null) == 268435456 ]] && pass "its cgroup and limit are kept" ||
  fail "its cgroup is gone after the restart"

# Stopped, and started again by the next connection.
as_user timeout 120 systemctl --user stop airlockd.service 2>/dev/null # it warns that the socket can start it again
[[ $(unit airlockd.service ActiveState) == inactive ]] || fail "stop: $(unit airlockd.service ActiveState)"
out=$(ctl ls 2>&1)
[[ $out == *work* && $(unit airlockd.service ActiveState) == active ]] &&
  pass "after a stop, the next command starts the daemon through its socket" ||
  fail "after a stop: $(echo "$out" | oneline)"

# Without the user's systemd (no bus to it): a clear error naming the fix, nothing run.
out=$(runuser -u "$user" -- env -C /tmp XDG_RUNTIME_DIR=/tmp/nodelegation HOME=/tmp/nodelegation \
  sh -c 'mkdir -p -m 700 $HOME && timeout 120 airlockctl run --memory 64M -- echo ran' 2>&1)
code=$?
[[ $code != 0 && $out != *ran* && $out == *"systemctl --user start airlockd.socket"* ]] &&
  pass "without the user's systemd bus --memory fails (exit $code): $(echo "$out" | tail -1)" ||
  fail "without the user's systemd bus: exit $code, $(echo "$out" | oneline)"
pkill -u "$user" -f 'airlockd --socket /tmp/nodelegation' || true

# Removed with apt: every user's daemon and sandboxes stop, and those of a daemon run as root (in
# the system manager's scopes); their files stay.
mkdir -p -m 700 /run/airlock-root
systemd-run --quiet --unit=airlockd-root /usr/bin/airlockd --socket /run/airlock-root/airlockd.sock
wait_for 30 test -S /run/airlock-root/airlockd.sock
out=$(timeout 120 airlockctl --no-autostart --socket /run/airlock-root/airlockd.sock create --name rootsb 2>&1) || fail "root create: $(echo "$out" | oneline)"
[[ -n $(systemctl list-units --plain --no-legend 'airlock-*.scope') ]] || fail "the root daemon's sandbox has no system scope"
DEBIAN_FRONTEND=noninteractive timeout 300 apt-get remove -y airlock >/dev/null 2>&1 || fail "apt remove"
[[ -z $(systemctl list-units --plain --no-legend 'airlock-*.scope') && -z $(pgrep -af 'bwrap|airlock-guest' | oneline) ]] &&
  pass "apt remove stopped the root daemon's sandboxes too" || fail "after apt remove, as root: $(systemctl list-units --plain --no-legend 'airlock-*.scope' | oneline) $(pgrep -af 'bwrap|airlock-guest' | oneline)"
systemctl stop airlockd-root 2>/dev/null
left=$(pgrep -u "$user" -af 'airlockd|bwrap|airlock-guest' | oneline)
[[ -z $left && $(unit airlockd.service ActiveState) == inactive && $(unit airlockd.socket ActiveState) == inactive &&
   -z $(as_user systemctl --user list-units --plain --no-legend 'airlock-*.scope') ]] &&
  pass "apt remove stopped the daemon, its socket and every sandbox" || fail "after apt remove: running: $left; service $(unit airlockd.service ActiveState), socket $(unit airlockd.socket ActiveState)"
images_gone() { [[ -z $(findmnt -rn -o TARGET,FSTYPE | grep -E 'airlock/workspaces|fuse2fs') && -z $(pgrep fuse2fs) ]]; }
wait_for 10 images_gone
mounted=$(findmnt -rn -o TARGET,FSTYPE | grep -E 'airlock/workspaces|fuse2fs' | oneline)
served=$(pgrep -af fuse2fs | oneline)
[[ -z $mounted && -z $served ]] && pass "apt remove unmounted every workspace image (the user's fuse2fs and root's loop devices)" ||
  fail "after apt remove, still mounted: $mounted; fuse2fs: $served"
[[ -d /home/$user/.local/share/airlock ]] && info "kept after removal: $(cd "/home/$user/.local/share/airlock" && ls | oneline) $(ls "/home/$user/.local/share/airlock/workspaces" | oneline)"
kill $watchdog 2>/dev/null
echo "DONE"
