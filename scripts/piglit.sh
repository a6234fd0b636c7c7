#!/usr/bin/env bash
# Fetches piglit's test files (the Debian package, unpacked, never installed) into a cache and
# prints the directory holding `tests/` and `generated_tests/`. Nothing of piglit is committed.
set -euo pipefail
cache="${SHREW_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/shrew}/piglit"
root="$cache/root/usr/lib/x86_64-linux-gnu/piglit"
if [ ! -d "$root/tests" ]; then
    mkdir -p "$cache"
    (
        cd "$cache"
        if ! ls piglit_*.deb >/dev/null 2>&1; then
            apt-get download piglit >/dev/null 2>&1 || {
                ${SUDO:-} apt-get update >/dev/null
                apt-get download piglit >/dev/null
            }
        fi
        rm -rf root
        dpkg -x piglit_*.deb root
    )
fi
echo "$root"
