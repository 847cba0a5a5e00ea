# Sourced by serve.sh and test.sh after they set install_extras (serve.sh: "local",
# what serving needs; test.sh: "local dev", everything): create .venv and install chatsvc
# with those extras, again only when pyproject.toml changed or an extra is missing.
# The first install compiles llama-cpp-python from source (PyPI has only its sdist), in
# the background while the rest downloads; pip's output goes to .venv/install.log.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "chatsvc needs Python >= 3.11 (set PYTHON=/path/to/python3.11)" >&2
    exit 1
fi

# One stamp per extra, holding the pyproject.toml it was installed from: test.sh's
# install satisfies serve.sh, serve.sh's lacks test.sh's dev extra.
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
missing=()
for extra in $install_extras; do
    [ "$(cat ".venv/.chatsvc-installed-$extra" 2>/dev/null)" = "$want" ] || missing+=("$extra")
done

_phase() { echo "[$1/4] $2" >&2; }

_pip() {  # pip, its output kept in the log; on failure the log's tail is shown
    if ! .venv/bin/python -m pip "$@" >>.venv/install.log 2>&1; then
        echo "pip $* failed; the end of .venv/install.log:" >&2
        tail -n 30 .venv/install.log >&2
        return 1
    fi
}

_install() {
    local started=$SECONDS extras
    extras=$(echo "$install_extras" | tr ' ' ',')
    if [ -x .venv/bin/python ]; then
        _phase 1 "using .venv (pip's output: .venv/install.log)"
    else
        _phase 1 "creating .venv (pip's output: .venv/install.log)"
        "$PYTHON" -m venv .venv
    fi
    : >.venv/install.log
    # The requirements (chatsvc's and its extras'), llama-cpp-python's apart: it
    # compiles meanwhile, then the last step installs chatsvc itself over them.
    local reqs llama
    mapfile -t reqs < <(.venv/bin/python - "$install_extras" <<'PY'
import sys, tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
extras = project["optional-dependencies"]
print("\n".join(project["dependencies"] + [r for e in sys.argv[1].split() for r in extras[e]]))
PY
)
    llama=$(printf '%s\n' "${reqs[@]}" | sed -n 's/^llama-cpp-python\(\[[^]]*\]\)\?/llama-cpp-python/p')
    mapfile -t reqs < <(printf '%s\n' "${reqs[@]}" | grep -v '^llama-cpp-python')
    local compile=""
    if [ -n "$llama" ] && ! .venv/bin/python -c 'import importlib.util as u, sys
sys.exit(u.find_spec("llama_cpp") is None)' 2>/dev/null; then
        _phase 2 "compiling llama-cpp-python in the background (the long pole: about 4 min on an idle 2-core machine, 8 on a busy one)"
        # chatsvc uses llama.cpp's text models only: no multimodal (mtmd/llava) library.
        CMAKE_ARGS="-DLLAVA_BUILD=OFF ${CMAKE_ARGS:-}" \
        CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
            _pip wheel --no-deps --wheel-dir .venv/wheels "$llama" &
        compile=$!
    else
        _phase 2 "llama-cpp-python: nothing to compile"
    fi
    _phase 3 "downloading and installing chatsvc's other dependencies (extras: $extras)"
    _pip install --progress-bar off "${reqs[@]}"
    if [ -n "$compile" ]; then
        _phase 4 "waiting for the llama-cpp-python compile"
        local tick=$((SECONDS + 30))
        while kill -0 "$compile" 2>/dev/null; do
            sleep 2
            [ "$SECONDS" -lt "$tick" ] && continue
            tick=$((SECONDS + 30))
            echo "      ... still compiling ($((SECONDS - started)) s since the start)" >&2
        done
        wait "$compile"
    else
        _phase 4 "installing chatsvc"
    fi
    _pip install --progress-bar off --find-links .venv/wheels -e ".[$extras]"
    for extra in $install_extras; do echo "$want" >".venv/.chatsvc-installed-$extra"; done
    echo "installed in $((SECONDS - started)) s" >&2
}
[ ${#missing[@]} -eq 0 ] || _install

# Debian packages some tests drive, installed once; test.sh calls this, serve.sh does not.
# chromium: the console's browser tests, through Playwright (which never downloads a
# browser here). nginx: tests/test_deploy_nginx.py runs docs/deploy.md's configuration.
# Without recommends, Debian 12's chromium pulls ~25 libraries and upgrades no installed
# package (with them: ~130, among them perl and systemd upgrades); nginx adds
# nginx-common. The tests start their own nginx on a loopback port. node + npm: the
# JavaScript clients the /v1 tests drive (openai for Node, the Vercel AI SDK).
ensure_test_packages() {
    local missing=()
    [ -x /usr/bin/chromium ] || missing+=(chromium)
    [ -x /usr/sbin/nginx ] || missing+=(nginx)
    command -v npm >/dev/null || missing+=(nodejs npm)
    [ ${#missing[@]} -eq 0 ] || _apt_install "${missing[@]}"
    _npm_ci tests/chatsvc/chat/js
}

# The locked JavaScript packages of one folder, installed again only when its
# package-lock.json changed (a stamp holds the lock file's hash).
_npm_ci() {
    local want
    want=$(sha256sum "$1/package-lock.json" | cut -d' ' -f1)
    [ "$(cat "$1/node_modules/.chatsvc-installed" 2>/dev/null)" = "$want" ] && return 0
    if ! command -v npm >/dev/null; then
        echo "warning: npm missing: the JavaScript client tests will fail" >&2
        return 0
    fi
    echo "installing the JavaScript test clients ($1, npm ci)" >&2
    (cd "$1" && npm ci --no-audit --no-fund --loglevel=error >&2)
    echo "$want" >"$1/node_modules/.chatsvc-installed"
}

_apt_install() {
    local missing=("$@")
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo -n"
    if command -v apt-get >/dev/null && $sudo true 2>/dev/null; then
        echo "installing Debian's ${missing[*]} for the tests, once:" \
             "apt-get install --no-install-recommends ${missing[*]} (no other package upgraded)" >&2
        $sudo apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
            "${missing[@]}" >&2
    else
        echo "warning: ${missing[*]} missing and cannot be installed without root" \
             "(apt-get install ${missing[*]}): the browser and nginx tests will fail." >&2
    fi
}
