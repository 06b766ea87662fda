#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Airlock on a real desktop: a Debian 12 guest under QEMU (TCG) with systemd as PID 1 and cgroup
# v2, where tests/vm/scenario.sh installs this build's .deb with apt and uses it as a normal user
# with a lingering systemd user manager. The guest writes its PASS/FAIL lines to a second serial
# port; this script prints them and fails when any check failed or the scenario did not finish.
# Usage: run.sh BUILD_DIR [CACHE_DIR]. The guest image is cached in CACHE_DIR (default
# /var/cache/airlock-vm, or $AIRLOCK_VM_CACHE) and rebuilt when its inputs change.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
cache=${2:-${AIRLOCK_VM_CACHE:-/var/cache/airlock-vm}}
for tool in qemu-system-x86_64 qemu-img mmdebstrap mkfs.ext4 cpack; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool is missing (installer/deps.sh installs it)" >&2; exit 1; }
done
work=$(mktemp -d /tmp/airlock-vm.XXXXXX)
trap 'rm -rf "$work"' EXIT
started=$SECONDS

(cd "$build" && cpack -G DEB -B "$work/pkg" >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log" >&2; exit 1; }
deb=$(ls "$work"/pkg/airlock_*.deb)
image=$(bash "$here/image.sh" "$cache" "$deb")
echo "image: $image ($((SECONDS - started)) s)"

mkdir "$work/payload"
cp "$deb" "$work/payload/airlock.deb"
cp "$here/scenario.sh" "$work/payload/scenario.sh"
mkfs.ext4 -q -d "$work/payload" "$work/payload.img" 64M
qemu-img create -q -f qcow2 -b "$image/rootfs.img" -F raw "$work/root.qcow2"
: >"$work/results.txt"
# KVM cannot boot this kernel here; TCG with two vCPUs does, in about 50 s to the scenario.
timeout 720 qemu-system-x86_64 -accel tcg -smp 2 -m 2048 -nographic -no-reboot -monitor none \
  -kernel "$image/vmlinuz" -initrd "$image/initrd.img" \
  -append "root=/dev/vda rw console=ttyS0 quiet systemd.show_status=0 panic=-1" \
  -drive "file=$work/root.qcow2,if=virtio,format=qcow2" -drive "file=$work/payload.img,if=virtio,format=raw" \
  -nic none -serial "file:$work/console.log" -chardev "file,id=results,path=$work/results.txt" \
  -device isa-serial,chardev=results || echo "FAIL: qemu exited with $? (console log follows)" >>"$work/results.txt"
tr -d '\r' <"$work/results.txt"
echo "the guest ran for $((SECONDS - started)) s in all"
if grep -q '^FAIL' "$work/results.txt" || ! grep -q '^DONE' "$work/results.txt"; then
  grep -q '^DONE' "$work/results.txt" || echo "FAIL: the scenario did not finish"
  echo "--- guest console (last 60 lines)"
  tail -60 "$work/console.log" | tr -d '\r'
  exit 1
fi
