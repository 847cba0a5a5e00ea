# Sourced by serve.sh and test.sh: create .venv and install chatsvc with its extras,
# again only when pyproject.toml changed. First install builds llama-cpp-python from
# source (about 5-12 minutes on 2 cores); later runs take seconds.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "chatsvc needs Python >= 3.11 (set PYTHON=/path/to/python3.11)" >&2
    exit 1
fi
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
stamp=.venv/.chatsvc-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "installing chatsvc into .venv (first time: llama-cpp-python compiles, ~5-12 min)..." >&2
    .venv/bin/python -m pip install --quiet --upgrade pip
    CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
        .venv/bin/python -m pip install --quiet -e ".[local,dev]"
    echo "$want" > "$stamp"
fi

# The console's browser tests drive Debian's chromium through Playwright (which never
# downloads a browser here). Installed once; test.sh calls this, serve.sh does not.
ensure_chromium() {
    [ -x /usr/bin/chromium ] && return 0
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo -n"
    if command -v apt-get >/dev/null && $sudo true 2>/dev/null; then
        # Without recommends, Debian 12's chromium pulls ~25 libraries and upgrades no
        # installed package (with them: ~130, among them perl and systemd upgrades).
        echo "installing Debian's chromium for the console's browser tests, once:" \
             "apt-get install --no-install-recommends chromium (no other package upgraded)" >&2
        $sudo apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
            chromium >&2
    else
        echo "warning: /usr/bin/chromium is missing and cannot be installed without root" \
             "(apt-get install chromium): the console's browser tests will fail." >&2
    fi
}
