// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "util/Result.h"

#include <QString>

#include <cstdint>
#include <optional>
#include <sys/types.h>

namespace airlock {

// A workspace that cannot outgrow its size: an ext4 filesystem in a sparse image file beside the
// workspace's folder ("ID.ext4" next to "ID"), mounted on that folder. As root the kernel mounts
// it through a loop device; a normal user's daemon has it served by fuse2fs (the kernel mounts
// ext4 for root only). The image grows as the sandbox writes and never past its size: a full
// workspace is ENOSPC inside the sandbox, and the disk the history shares keeps the rest. The
// sandbox writes through the filesystem only; the image is out of its reach (the workspaces
// folder is 0711 root's or 0700 the user's, and only the folder is bound into the sandbox), so
// every byte of it is the kernel's or fuse2fs's work, never the sandbox's.
namespace volume {

enum class Driver { None, Loop, Fuse2fs };

// How this daemon would mount a workspace image: a loop device as root, fuse2fs otherwise.
// None, with why and the fix in `why`, when the pieces are missing.
Driver probe(bool root, QString *why);
QString driverName(Driver driver);

// The runtime's own folder for a sandbox (gVisor's bundle), beside its workspace: DIR.runtime.
QString runtimeDirOf(const QString &dir);
// Where the runtime mounts a sandbox's copy-on-write mounts (in its own mount namespace; decision
// 9): a folder its uid can reach, as bubblewrap follows the path. A user's daemon's: in the
// runtime's folder; a root one's (whose workspaces' folder is root's alone): beside that folder,
// in one of its own that anyone may pass through.
QString cowMountPointsOf(const QString &dir, bool root);
// The runtime's folder and the copy-on-write mount points of the workspace `dir`, removed.
void removeRuntimeDirs(const QString &dir, bool root);
// The workspace whose runtime folder has this name, or an empty string if it is no runtime folder.
QString workspaceOfRuntimeDir(const QString &name);
QString imagePath(const QString &dir);
bool hasImage(const QString &dir);

// Makes the image (`bytes` in all, sparse) with a filesystem whose root belongs to uid:gid, and
// mounts it on `dir`, an empty folder that exists. Nothing is left behind when it fails.
Status create(Driver driver, const QString &dir, uint64_t bytes, uid_t uid, gid_t gid);
// Mounts the image of `dir` again (after a reboot, say); Ok when it is mounted already.
Status mount(Driver driver, const QString &dir);
// Whether something is mounted on `dir` (a dead fuse2fs counts: its mount is still there).
bool mounted(const QString &dir);
// The mount points strictly below `root` in this process's mount namespace (/proc/self/mountinfo).
QStringList mountsUnder(const QString &root);
// Whether `path` is the root of a mount (a bind of a folder onto itself is, though its device is
// its parent's).
bool isMountRoot(const QString &path);
// Makes the folder of a root daemon's workspaces a mount of its own (a private bind onto itself),
// when nothing is mounted below it yet: a runtime's mount namespace then drops every other
// sandbox's workspace with one unmount, whatever their number (BwrapLauncher). Private: a
// workspace mounted below it is not copied to where the folder itself came from. Ok when it is
// one already; an error when something is mounted below it (the next start with none makes it),
// or when the kernel does not say which folders are mounts (statx, Linux 5.8). Kept: a later
// daemon finds it made.
Status bindOnItself(const QString &dir);

// Takes the workspace away: unmounts the image (lazily: a sandbox that is still dying keeps its
// view until it is gone), deletes it, then the folder. For a folder without an image (a sandbox
// made with no disk limit), the folder and what is in it.
bool removeWorkspace(const QString &dir);
// Moves the workspace's files to `target` (a new folder), where they stay as plain files: the
// image is mounted if it is not, copied out, and removed. A folder without an image is renamed.
// When the copy cannot be made (a path too long for cp, a copy past kKeepCopyMs), the image
// itself is kept instead, as `target`.ext4. Returns where it was kept.
Result<QString> keepWorkspace(Driver driver, const QString &dir, const QString &target);
constexpr int kKeepCopyMs = 30'000;

struct Usage {
    uint64_t sizeBytes = 0; // what the filesystem offers, its own bookkeeping taken off
    uint64_t usedBytes = 0;
};
std::optional<Usage> usage(const QString &dir);

// Free bytes for an unprivileged writer on the filesystem holding `path`.
std::optional<uint64_t> freeBytes(const QString &path);

} // namespace volume
} // namespace airlock
