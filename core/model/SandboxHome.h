// SPDX-License-Identifier: Apache-2.0
#pragma once

namespace airlock {

// Every execution's HOME: a tmpfs of the sandbox's own, not the workspace, so nothing an agent
// writes into the workspace (fs.write, MCP sandbox_write_file, a file copy) is read as a startup
// file.
inline constexpr char kSandboxHome[] = "/home/sandbox";

// Files that shells read before the command a rule judged (bash reads ~/.bashrc even for `bash -c`
// when its stdin is a socket). Each is an empty read-only file, so no command can plant one.
// And the user configuration of programs that can make them run other programs or send elsewhere
// (git's core.fsmonitor, aliases and url.insteadOf; ssh's ProxyCommand; npm's script-shell; curl
// and wget rc files; cargo's rustc-wrapper): planted once, it would change what a later command a
// rule allowed does. A program's configuration in the workspace (.git/config) is the workspace's.
inline constexpr const char *kHomeStartupFiles[] = {
    ".profile",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".inputrc",
    ".zshenv",
    ".zprofile",
    ".zshrc",
    ".zlogin",
    ".zlogout",
    ".kshrc",
    ".mkshrc",
    ".gitconfig",
    ".npmrc",
    ".curlrc",
    ".wgetrc",
    ".cargo/config.toml",
};

// Directories whose files run when a program starts: python's user site (.pth files run at every
// start), fish's config and conf.d, node's global module fallbacks. Each is read-only and empty.
inline constexpr const char *kHomeStartupDirs[]
    = {".local/lib", ".config/fish", ".config/git", ".config/pip", ".node_modules", ".node_libraries", ".ssh"};

} // namespace airlock
