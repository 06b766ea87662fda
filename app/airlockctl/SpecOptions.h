// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "model/CreateSandboxRequest.h"

#include <QCommandLineParser>
#include <QJsonObject>

namespace airlock::cli {

// The sandbox options `create` and `run` share: name, preset, policy file, network, isolation,
// mounts and limits. Read into a sandbox.create request: the flags are the sandbox's own policy layer, on
// top of --policy FILE, on top of the preset.
class SpecOptions {
public:
    QList<QCommandLineOption> list() const;
    Result<CreateSandboxRequest> read(const QCommandLineParser &parser) const;

private:
    Result<SandboxSpec> readSpec(const QCommandLineParser &parser) const;

    QCommandLineOption m_preset{QStringLiteral("preset"),
        QStringLiteral("Start from this policy preset: locked (default), package-install, open."),
        QStringLiteral("name")};
    QCommandLineOption m_policy{QStringLiteral("policy"),
        QStringLiteral("The sandbox's own policy layer, from a JSON file ('-': stdin)."), QStringLiteral("file")};
    QCommandLineOption m_name{
        QStringLiteral("name"), QStringLiteral("Sandbox name (a-z 0-9 _ . -)."), QStringLiteral("name")};
    QCommandLineOption m_network{QStringLiteral("network"),
        QStringLiteral("none (default: only loopback), allowlist (only through the egress proxy, to what "
                       "--allow and the policy name) or full (the host network, flagged everywhere)."),
        QStringLiteral("mode")};
    QCommandLineOption m_allow{QStringLiteral("allow"),
        QStringLiteral("Let the sandbox reach HOST (example.com, *.example.com, with an optional :PORT) through "
                       "the egress proxy; implies --network allowlist. Repeatable."),
        QStringLiteral("host")};
    QCommandLineOption m_isolation{QStringLiteral("isolation"),
        QStringLiteral("What stands between the sandbox and the host's kernel: namespaces (default: bubblewrap, "
                       "seccomp and Landlock) or gvisor (gVisor's kernel in user space; needs runsc)."),
        QStringLiteral("kind")};
    QCommandLineOption m_mount{QStringLiteral("mount"),
        QStringLiteral("Bind HOST into the sandbox at PATH (read-only unless :rw; :cow writable in the sandbox, "
                       "HOST untouched: the changes are kept apart)."),
        QStringLiteral("HOST:PATH[:ro|rw|cow]")};
    QCommandLineOption m_memory{
        QStringLiteral("memory"), QStringLiteral("Memory limit, e.g. 512M (needs a cgroup)."), QStringLiteral("size")};
    QCommandLineOption m_pids{
        QStringLiteral("pids"), QStringLiteral("Maximum number of processes (default 1024)."), QStringLiteral("n")};
    QCommandLineOption m_tmp{QStringLiteral("tmp-size"),
        QStringLiteral("Size of each of /tmp, /var/tmp and the home (tmpfs; default 1G)."), QStringLiteral("size")};
    QCommandLineOption m_disk{QStringLiteral("disk"),
        QStringLiteral("Size of the workspace, e.g. 2G, or none for no limit (default 10G, or what the disk has free "
                       "beyond the daemon's reserve)."),
        QStringLiteral("size")};
    QCommandLineOption m_cpus{QStringLiteral("cpus"),
        QStringLiteral("CPU bandwidth of the whole sandbox in cores, e.g. 0.5 or 2 (needs a cgroup)."),
        QStringLiteral("cores")};
    QCommandLineOption m_cpu{
        QStringLiteral("cpu-time"), QStringLiteral("CPU time per process, e.g. 60s."), QStringLiteral("duration")};
    QCommandLineOption m_wall{QStringLiteral("exec-timeout"),
        QStringLiteral("Default wall-clock limit per execution, e.g. 5m."), QStringLiteral("duration")};
    QCommandLineOption m_files{
        QStringLiteral("open-files"), QStringLiteral("Open files per process (default 1024)."), QStringLiteral("n")};
    QCommandLineOption m_fsize{QStringLiteral("file-size"),
        QStringLiteral("Largest file a process may write, e.g. 1G."), QStringLiteral("size")};
    QCommandLineOption m_output{QStringLiteral("output-limit"),
        QStringLiteral("Output bytes per execution before it is cut and killed (default 1G)."), QStringLiteral("size")};
};

// --preset's value, if it names a preset (the error lists them).
Result<QString> readPreset(const QString &name);
// --allow's values, each normalised as the network rules compare hosts.
Result<QStringList> readAllowedHosts(const QStringList &hosts);

// A policy document from a file ('-': stdin), validated: errors name the field.
Result<QJsonObject> readPolicyFile(const QString &path);

} // namespace airlock::cli
