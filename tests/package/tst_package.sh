#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Debian package, as a user gets it: built with cpack from this build, its metadata and file
# list read with dpkg-deb, installed with dpkg into a scratch root (the machine itself is not
# touched), used from there (airlockctl run -- echo ok, with the daemon and guest it installed),
# its desktop entry validated, its manual pages rendered, its completions loaded; then removed,
# leaving nothing behind. Usage: tst_package.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
work=$(mktemp -d /tmp/tst_package.XXXXXX)
chmod 755 "$work" # as /usr is: sandboxes run the installed guest as another user
daemon_pids=()
cleanup() {
  # The installed daemon, also when a step failed before its pid was known.
  pkill -f "^$work/root/usr/bin/airlockd" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "PASS: $*"; }

grep -q '^CMAKE_INSTALL_PREFIX:PATH=/usr$' "$build/CMakeCache.txt" ||
  fail "the build is not configured for /usr (installer/build.sh does it; or -DCMAKE_INSTALL_PREFIX=/usr)"

command -v lintian >/dev/null || fail "lintian is not installed (installer/deps.sh installs it)"

# Built from this build tree.
(cd "$build" && cpack -G DEB -B "$work/pkg" >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log" >&2; fail "cpack"; }
version=$("$build/bin/airlockctl" --version | awk '{print $2}')
arch=$(dpkg --print-architecture)
deb="$work/pkg/airlock_${version}_${arch}.deb"
[[ -f $deb ]] || fail "no $deb: $(ls "$work/pkg")"
pass "built $(basename "$deb") ($(du -h "$deb" | cut -f1))"

# Metadata: name, version, architecture, dependencies from the linked libraries plus bubblewrap.
info=$(dpkg-deb --info "$deb")
field() { dpkg-deb --field "$deb" "$1"; }
[[ $(field Package) == airlock ]] || fail "Package: $(field Package)"
[[ $(field Version) == "$version" ]] || fail "Version: $(field Version), airlockctl says $version"
[[ $(field Architecture) == "$arch" ]] || fail "Architecture: $(field Architecture)"
depends=$(field Depends)
for dep in bubblewrap libqt6svg6 libqt6core6 libqt6widgets6 libqt6websockets6 libseccomp2 libsqlite3-0 libspdlog1.10 libssl3 libqt6keychain1 'libc6 (>='; do
  [[ $depends == *"$dep"* ]] || fail "Depends lacks $dep: $depends"
done
[[ $(field Recommends) == *bash-completion* && $(field Recommends) == *dbus-user-session* ]] || fail "Recommends lacks bash-completion or dbus-user-session: $(field Recommends)"
# One maintainer script: prerm, which stops every user's daemon and sandboxes on removal only.
[[ $(dpkg-deb --ctrl-tarfile "$deb" | tar -t | grep -E 'preinst|postinst|prerm|postrm') == ./prerm ]] || fail "maintainer scripts: $(dpkg-deb --ctrl-tarfile "$deb" | tar -t | grep -E 'inst|rm' | tr '\n' ' ')"
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./prerm | grep -q '"$1" = remove' || fail "prerm acts on more than removal"
pass "metadata: Version $version, Depends: $depends"

# Debian's own checker: no errors or warnings.
lint=$(lintian --fail-on error,warning "$deb" 2>&1) || fail "lintian: $lint"
pass "lintian: no errors or warnings"

# Files, in the freedesktop and FHS places; nothing of the tests.
contents=$(dpkg-deb --contents "$deb" | awk '{print $6}')
for path in ./usr/bin/airlock ./usr/bin/airlockctl ./usr/bin/airlockd ./usr/libexec/airlock/airlock-guest \
  ./usr/libexec/airlock/airlock-gvisor-preload.so ./usr/libexec/airlock/airlock-keychain.so \
            ./usr/share/applications/airlock.desktop ./usr/share/icons/hicolor/scalable/apps/airlock.svg \
            ./usr/share/icons/hicolor/{16x16,22x22,24x24,32x32,48x48,64x64,128x128,256x256}/apps/airlock.png \
            ./usr/lib/systemd/user/airlockd.service ./usr/lib/systemd/user/airlockd.socket \
            ./usr/share/airlock/presets/locked.json ./usr/share/airlock/presets/package-install.json \
            ./usr/share/airlock/tools/package.version.json ./usr/share/airlock/tools/email.send.json \
            ./usr/share/bash-completion/completions/airlockctl ./usr/share/zsh/vendor-completions/_airlockctl \
            ./usr/share/man/man1/airlock.1.gz ./usr/share/man/man1/airlockctl.1.gz ./usr/share/man/man1/airlockd.1.gz \
            ./usr/share/doc/airlock/copyright ./usr/share/doc/airlock/changelog.gz; do
  grep -qxF "$path" <<<"$contents" || fail "missing $path"
done
! grep -E 'tst_|probe|bad-guest|other-version|bench|icon-render|/usr/local' <<<"$contents" || fail "test or build files in the package"
pass "contents: $(grep -vc '/$' <<<"$contents") files in their places"

# Installed into a scratch root by dpkg itself, and removed again below.
root="$work/root"
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
touch "$root/var/lib/dpkg/status"
dpkg --root="$root" --force-depends --force-not-root --force-script-chrootless --log=/dev/null -i "$deb" >"$work/dpkg.log" 2>&1 ||
  { cat "$work/dpkg.log" >&2; fail "dpkg -i"; }
pass "installed into a scratch root"

# Used from there: the CLI starts the installed daemon, which finds the installed guest.
export XDG_RUNTIME_DIR="$work/run" XDG_DATA_HOME="$work/data" XDG_STATE_HOME="$work/state" XDG_CONFIG_HOME="$work/config"
mkdir -p -m 700 "$XDG_RUNTIME_DIR"
unset AIRLOCK_HOST AIRLOCK_SOCKET DBUS_SESSION_BUS_ADDRESS
out=$("$root/usr/bin/airlockctl" run -- echo ok 2>"$work/run.err") || { cat "$work/run.err" >&2; fail "airlockctl run"; }
[[ $out == ok ]] || fail "airlockctl run printed '$out'"
daemon_pids+=($(pgrep -f "^$root/usr/bin/airlockd" || true))
[[ ${#daemon_pids[@]} -eq 1 ]] || fail "expected the installed airlockd to be running, found: ${daemon_pids[*]:-none}"
grep -qF "guest $root/usr/libexec/airlock/airlock-guest)" "$XDG_STATE_HOME/airlock/airlockd.log" ||
  fail "the daemon does not use the installed guest: $(grep ready "$XDG_STATE_HOME/airlock/airlockd.log")"
for program in airlockctl airlockd; do
  [[ $("$root/usr/bin/$program" --version) == "$program $version" ]] || fail "$program --version: $("$root/usr/bin/$program" --version)"
done
[[ $(QT_QPA_PLATFORM=offscreen "$root/usr/bin/airlock" --version) == "airlock $version" ]] || fail "airlock --version"
# Completing a sandbox name asks the running daemon.
"$root/usr/bin/airlockctl" create --name pkg-box >/dev/null || fail "create"
words=$(PATH="$root/usr/bin:$PATH" bash -c "source '$root/usr/share/bash-completion/completions/airlockctl'; COMP_WORDS=(airlockctl exec pkg); COMP_CWORD=2; _airlockctl; echo \${COMPREPLY[*]}")
[[ $words == pkg-box ]] || fail "completing 'airlockctl exec pkg' gave '$words'"
# Only where a sandbox goes: not as a command, not after "--", not for another option's value.
for line in "airlockctl pkg" "airlockctl exec pkg-box -- pkg" "airlockctl create --name pkg" "airlockctl history --sandbox pkg"; do
  read -ra typed <<<"$line"
  words=$(PATH="$root/usr/bin:$PATH" bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _airlockctl; echo ${COMPREPLY[*]}' _ \
    "$root/usr/share/bash-completion/completions/airlockctl" "${typed[@]}")
  case $line in
    *--sandbox*) [[ $words == pkg-box ]] || fail "completing '$line' gave '$words'";;
    *) [[ $words != *pkg-box* ]] || fail "completing '$line' offered a sandbox: '$words'";;
  esac
done
# Sandboxes outlive their daemon: this one is ended before the daemon is stopped.
"$root/usr/bin/airlockctl" rm pkg-box >/dev/null || fail "rm"
kill "${daemon_pids[@]}"
pass "airlockctl run -- echo ok from the installed paths; --version is $version everywhere; sandbox names complete"

# The desktop entry, the manual pages, the completions.
desktop-file-validate "$root/usr/share/applications/airlock.desktop" || fail "desktop-file-validate"
for page in airlock airlockctl airlockd; do
  rendered=$(MANWIDTH=100 man --warnings -l "$root/usr/share/man/man1/$page.1.gz" 2>"$work/man.err")
  [[ ! -s $work/man.err ]] || { cat "$work/man.err" >&2; fail "man $page warns"; }
  grep -q "^SYNOPSIS" <<<"$rendered" || fail "man $page has no SYNOPSIS"
  grep -q "Airlock $version" <<<"$rendered" || fail "man $page does not say version $version"
done
man_ctl=$(MANWIDTH=100 man -l "$root/usr/share/man/man1/airlockctl.1.gz")
for option in '--preset' '--lease' '--scope' '--host NAME|URL'; do
  grep -qF -- "$option" <<<"$man_ctl$(MANWIDTH=100 man -l "$root/usr/share/man/man1/airlockd.1.gz")" || fail "the manual lacks $option"
done
bash -c "source '$root/usr/share/bash-completion/completions/airlockctl' && complete -p airlockctl" >/dev/null || fail "bash completion"
words=$(bash -c "source '$root/usr/share/bash-completion/completions/airlockctl'; COMP_WORDS=(airlockctl ex); COMP_CWORD=1; _airlockctl; echo \${COMPREPLY[*]}")
[[ $words == "exec export" ]] || fail "completing 'airlockctl ex' gave '$words'"
words=$(bash -c "source '$root/usr/share/bash-completion/completions/airlockctl'; COMP_WORDS=(airlockctl mcp --pr); COMP_CWORD=2; _airlockctl; echo \${COMPREPLY[*]}")
[[ $words == "--preset" ]] || fail "completing 'airlockctl mcp --pr' gave '$words'"
if command -v zsh >/dev/null; then zsh -n "$root/usr/share/zsh/vendor-completions/_airlockctl" || fail "zsh completion syntax"; fi
pass "desktop entry valid, manual pages render without warnings, completions complete"

# Removed: nothing of it is left.
dpkg --root="$root" --force-not-root --force-script-chrootless --log=/dev/null -r airlock >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log" >&2; fail "dpkg -r"; }
left=$(cd "$root" && find . -mindepth 1 -not -path './var' -not -path './var/lib' -not -path './var/lib/dpkg' -not -path './var/lib/dpkg/*')
[[ -z $left ]] || fail "left behind after dpkg -r: $left"
pass "dpkg -r leaves nothing behind"
