#!/usr/bin/env bash
# Install the app into a virtualenv exactly as uv.lock says: every library at its locked
# version, each file checked against the lock's SHA-256 (pip --require-hashes), so two builds
# of one commit ship the same libraries.  tests/run.sh and packaging/install_deps.sh (every
# installer) call it; it is the one way this project installs its dependencies.
#
#   VPY=.venv/bin/python packaging/install_locked.sh [--editable] EXTRA[,EXTRA...]
#
# uv (pinned below) turns the lock into a hashed requirements list for these extras and this
# machine; pip installs it.  llama-cpp-python is the exception: PyPI has no wheels of it, so
# packaging/llama_wheel.sh compiles one from the locked sdist (hash-checked too) into
# IC_WHEEL_DIR, where CI caches it, and it is installed from there.
# After changing pyproject.toml's dependencies: .venv/bin/python -m uv lock (tests/packaging/test_lock.py
# fails until the lock agrees).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
UV_VERSION=0.13.9
VPY="${VPY:?set VPY to the python of the virtualenv}"
editable=()
if [[ "${1:-}" == --editable ]]; then editable=(-e); shift; fi
EXTRAS="${1:?name the extras, e.g. local,zh}"
WHEELS="${IC_WHEEL_DIR:-$ROOT/build/wheels}"

"$VPY" -m pip install --quiet --disable-pip-version-check "uv==$UV_VERSION"
extra_args=()
IFS=, read -ra names <<< "$EXTRAS"
for name in "${names[@]}"; do extra_args+=(--extra "$name"); done
requirements="$(mktemp)"
trap 'rm -f "$requirements"' EXIT
(cd "$ROOT" && "$VPY" -m uv export --quiet --frozen --format requirements-txt --no-emit-project \
  --no-emit-package llama-cpp-python "${extra_args[@]}" -o "$requirements")
"$VPY" -m pip install --quiet --disable-pip-version-check --require-hashes --no-deps -r "$requirements"

PYTHON="$VPY" bash "$ROOT/packaging/llama_wheel.sh" "$WHEELS"
llama="$(sed -n 's/^\(llama-cpp-python==[0-9.]*\).*/\1/p' "$ROOT/packaging/llama-cpp-python.txt")"
"$VPY" -m pip install --quiet --disable-pip-version-check --no-deps --no-index --find-links "$WHEELS" "$llama"
"$VPY" -m pip install --quiet --disable-pip-version-check --no-deps "${editable[@]}" "$ROOT"
