#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A Debian 12 guest with systemd as PID 1 and the unified cgroup hierarchy, for tests/vm/run.sh:
# a root filesystem from mmdebstrap over the machine's own Debian mirror, with the packages
# Airlock's .deb depends on already installed (the guest has no network, so apt installs the .deb
# offline), and the Debian cloud kernel and its initramfs beside it.
# Usage: image.sh CACHE_DIR DEB. Prints the directory that holds rootfs.img, vmlinuz, initrd.img;
# it is reused while this script and the .deb's dependencies stay the same.
set -euo pipefail
cache=$1 deb=$2
# The .deb's dependencies without their versions ("a (>= 1) | b" keeps a), what the scenario
# uses, and a systemd desktop's basics: logind for the user's lingering manager, dbus for it.
deps=$(dpkg-deb --field "$deb" Depends | tr ',' '\n' | sed -e 's/|.*//' -e 's/(.*)//' -e 's/ //g' |
  grep -v -e '^$' -e '^qt6-websockets-abi$' | sort -u | paste -sd, -)
packages="systemd,systemd-sysv,dbus,dbus-user-session,libpam-systemd,udev,procps,kmod,linux-image-cloud-amd64,initramfs-tools,$deps"
key=$( (cat "$0"; echo "$packages") | sha256sum | cut -c1-16)
dir=$cache/bookworm-$key
if [[ -f $dir/ready ]]; then
  echo "$dir"
  exit 0
fi
# One image at a time: those of other inputs go.
mkdir -p "$cache"
find "$cache" -mindepth 1 -maxdepth 1 -name 'bookworm-*' -exec rm -rf {} +
mkdir -p "$dir"
root=$dir/rootfs
{
  # The initramfs needs only what finds a virtio disk with ext4 on it.
  mmdebstrap --variant=minbase --include="$packages" \
    --essential-hook='mkdir -p "$1/etc/initramfs-tools/conf.d" && echo MODULES=list > "$1/etc/initramfs-tools/conf.d/airlock-vm" && printf "virtio_pci\nvirtio_blk\next4\n" >> "$1/etc/initramfs-tools/modules"' \
    --customize-hook='echo airlock-vm > "$1/etc/hostname"' \
    --customize-hook='printf "/dev/vda / ext4 rw,relatime 0 1\n" > "$1/etc/fstab"' \
    --customize-hook='chroot "$1" passwd -d root' \
    --customize-hook='cp "$1"/boot/vmlinuz-* "$1/../vmlinuz" && cp "$1"/boot/initrd.img-* "$1/../initrd.img"' \
    --customize-hook='install -m 0644 /dev/stdin "$1/etc/systemd/system/airlock-vm-test.service" <<UNIT
[Unit]
Description=Airlock VM scenario from the payload disk
After=multi-user.target
Wants=multi-user.target
[Service]
Type=oneshot
ExecStartPre=/bin/mkdir -p /payload
ExecStartPre=/bin/mount -o ro /dev/vdb /payload
ExecStart=/bin/bash /payload/scenario.sh /dev/ttyS1
ExecStopPost=/bin/systemctl --no-block poweroff
StandardOutput=journal+console
StandardError=journal+console
TimeoutStartSec=1200
[Install]
WantedBy=multi-user.target
UNIT' \
    --customize-hook='chroot "$1" systemctl enable airlock-vm-test.service' \
    --customize-hook='chroot "$1" systemctl mask apt-daily.timer apt-daily-upgrade.timer e2scrub_reap.service systemd-timesyncd.service' \
    bookworm "$root"
  mkfs.ext4 -q -L airlock-vm -d "$root" "$dir/rootfs.img" 4G
} >"$dir/build.log" 2>&1 || { tail -30 "$dir/build.log" >&2; exit 1; }
rm -rf "$root"
touch "$dir/ready"
echo "$dir"
