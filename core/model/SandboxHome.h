// SPDX-License-Identifier: Apache-2.0
#pragma once

namespace airlock {

// Every execution's HOME: a tmpfs of the sandbox's own, not the workspace, so nothing an agent
// writes into the workspace (fs.write, MCP sandbox_write_file, a file copy) is read as a startup
// file.
inline constexpr char kSandboxHome[] = "/home/sandbox";

// Files that shells read before the command a rule judged (bash reads ~/.bashrc even for `bash -c`
// when its stdin is a socket). Each is an empty read-only file, so no command can plant one.
inline constexpr const char *kHomeStartupFiles[] = {
    ".profile", ".bashrc",  ".bash_profile", ".bash_login", ".bash_logout", ".inputrc", ".zshenv",
    ".zprofile", ".zshrc", ".zlogin",       ".zlogout",    ".kshrc",       ".mkshrc",
};

// Directories whose files run when a program starts: python's user site (.pth files run at every
// start), fish's config and conf.d, node's global module fallbacks. Each is read-only and empty.
inline constexpr const char *kHomeStartupDirs[] = {".local/lib", ".config/fish", ".node_modules", ".node_libraries"};

} // namespace airlock
