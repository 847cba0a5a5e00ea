#!/usr/bin/env bash
# Run chatsvc on embedded defaults: SQLite in ./data, and the bundled local LLM and
# embedder unless LLM_API_KEY / a reachable Ollama are configured.
# Creates an admin user on first run; its token is kept in data/admin-token (mode 600).
install_extras="local"  # what serving needs
source "$(dirname "$0")/_bootstrap.sh"
export CHATSVC_DATA_DIR=${CHATSVC_DATA_DIR:-./data}
mkdir -p "$CHATSVC_DATA_DIR"
# Decide on the embedder before anything opens the database: vectors are built for it.
# The probe imports nothing of chatsvc (importing it took ~2 s of a 2.7 s start).
if [ -z "${CHATSVC_EMBEDDINGS:-}" ] && ! .venv/bin/python scripts/ollama_probe.py; then
    echo "Ollama not reachable: using the bundled local embedder (CHATSVC_EMBEDDINGS=local)"
    export CHATSVC_EMBEDDINGS=local
fi
token_file="$CHATSVC_DATA_DIR/admin-token"
if [ ! -s "$token_file" ]; then
    (umask 077; .venv/bin/chatsvc users add admin --admin | tail -n 1 > "$token_file")
fi
port=${CHATSVC_PORT:-8000}
cat <<MSG
chatsvc admin token: $(cat "$token_file")
try:  curl -N http://127.0.0.1:$port/api/chat -H "Authorization: Bearer $(cat "$token_file")" \\
        -H 'Content-Type: application/json' -d '{"message": "Hello!"}'
MSG
exec .venv/bin/chatsvc serve "$@"
