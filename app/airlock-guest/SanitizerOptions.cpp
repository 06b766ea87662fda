// SPDX-License-Identifier: Apache-2.0
// In sanitizer builds (AIRLOCK_SANITIZE), programs that run inside a sandbox cannot use
// LeakSanitizer: it needs ptrace, which the sandbox's seccomp filter refuses, and the sandbox's
// empty environment cannot carry ASAN_OPTIONS. Address checking stays on.
#if defined(__SANITIZE_ADDRESS__)
extern "C" const char *__asan_default_options()
{
    return "detect_leaks=0";
}
#endif
