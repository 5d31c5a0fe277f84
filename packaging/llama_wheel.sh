#!/usr/bin/env bash
# Build the pinned llama-cpp-python wheel for this OS into a folder, unless one is there.
#
#   PYTHON=python3 packaging/llama_wheel.sh [DIR]     (DIR default: build/wheels)
#
# Then `pip install --find-links DIR -c packaging/llama-cpp-python.txt …` installs it without
# compiling llama.cpp again: CI caches DIR per OS (actions/cache, keyed on the pin file and
# this script), so only a version bump pays the 5-20 minute compile.
#
# What it is compiled for is set here, once, for every build (tests/run.sh passes the same
# flag): -DGGML_NATIVE=OFF, i.e. llama.cpp's portable x86-64 set (SSE4.2, AVX, AVX2, BMI2,
# FMA, F16C), never the build machine's own extensions.  A CPU without them cannot run it;
# app/platform/bundled.py checks for exactly that set at run time and turns the local model off with
# one sentence instead of an illegal-instruction crash.  (Not GGML_BACKEND_DL with
# GGML_CPU_ALL_VARIANTS, which picks a CPU variant at run time: llama-cpp-python 0.3.36 never
# calls ggml_backend_load_all(), so such a build would find no CPU backend.)  macOS: built for the
# LSMinimumSystemVersion of packaging/macos/Info.plist (MACOSX_DEPLOYMENT_TARGET).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PIN="$ROOT/packaging/llama-cpp-python.txt"
DIR="${1:-$ROOT/build/wheels}"
PY="${PYTHON:-python3}"
VERSION="$(sed -n 's/^llama-cpp-python==\([0-9.]*\).*/\1/p' "$PIN")"
[[ -n "$VERSION" ]] || { echo "error: no llama-cpp-python==X pin in $PIN" >&2; exit 1; }

export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}"
if [[ "$(uname -s)" == Darwin ]]; then
  MACOSX_DEPLOYMENT_TARGET="$("$PY" -c 'import plistlib,sys; print(plistlib.load(open(sys.argv[1],"rb"))["LSMinimumSystemVersion"])' \
    "$ROOT/packaging/macos/Info.plist")"
  export MACOSX_DEPLOYMENT_TARGET
fi

mkdir -p "$DIR"
shopt -s nullglob
existing=("$DIR"/llama_cpp_python-"$VERSION"-*.whl)
if ((${#existing[@]})); then
  echo "== llama-cpp-python $VERSION: reusing ${existing[0]}"
  exit 0
fi
# The sdist compiled is the one uv.lock names, checked against the lock's hash.
HASH="$("$PY" - "$ROOT/uv.lock" "$VERSION" <<'PY'
import sys, tomllib
with open(sys.argv[1], "rb") as f:
    lock = tomllib.load(f)
found = [p for p in lock["package"] if p["name"] == "llama-cpp-python" and p["version"] == sys.argv[2]]
print(found[0]["sdist"]["hash"] if found else "")
PY
)"
[[ -n "$HASH" ]] || { echo "error: uv.lock has no llama-cpp-python $VERSION (run: python -m uv lock)" >&2; exit 1; }
echo "== llama-cpp-python $VERSION: compiling a wheel (CMAKE_ARGS=$CMAKE_ARGS${MACOSX_DEPLOYMENT_TARGET:+, MACOSX_DEPLOYMENT_TARGET=$MACOSX_DEPLOYMENT_TARGET}) into $DIR"
REQ="$(mktemp)"
trap 'rm -f "$REQ"' EXIT
echo "llama-cpp-python==$VERSION --hash=$HASH" > "$REQ"
"$PY" -m pip wheel --no-deps --no-binary llama-cpp-python --require-hashes -w "$DIR" -r "$REQ"
