#!/usr/bin/env bash
# Prepare a build machine: system packages (Linux CI only), .venv with the app, the local
# LLM extra and PyInstaller.  Runs on Linux, macOS and Windows (Git Bash).
#
#   PYTHON=python3.11 packaging/install_deps.sh [--dev]
#
#   --dev   also the test tools (the [dev] extra): CI runs the tests before building
#
# Every library comes from uv.lock, hash-checked (packaging/install_locked.sh);
# llama-cpp-python is compiled once per version into build/wheels by
# packaging/llama_wheel.sh (which says what it is compiled for) and installed from there;
# the version is pinned in packaging/llama-cpp-python.txt.  IC_WHEEL_DIR overrides the
# folder (CI caches it).  IC_BUNDLE_LLM=0 skips the local LLM's server extra.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

if [[ "$(uname -s)" == Linux && "${CI:-}" == true ]] && command -v apt-get >/dev/null; then
  # binutils: PyInstaller's ldd/objdump + our debug-info strip; libportaudio2: bundled;
  # the Qt libraries for the offscreen self-test.
  sudo apt-get update -qq
  sudo apt-get install -y -qq binutils libportaudio2 libegl1 libgl1 libxkbcommon0 libfontconfig1 \
    libdbus-1-3 libglib2.0-0 cmake build-essential
fi

case "$(uname -s)" in
  MINGW*|MSYS*|CYGWIN*)
    if [[ "${CI:-}" == true ]] && ! command -v iscc >/dev/null \
        && [[ ! -f "/c/Program Files (x86)/Inno Setup 6/ISCC.exe" ]]; then
      choco install innosetup -y --no-progress
    fi ;;
esac

PY="${PYTHON:-python3}"
[[ -d .venv ]] || "$PY" -m venv .venv
if [[ -x .venv/bin/python ]]; then VPY=.venv/bin/python; else VPY=.venv/Scripts/python.exe; fi

"$VPY" -m pip install --upgrade pip
# llama-cpp-python is a default dependency (the end-of-turn words model); [local] adds its server.
extras="zh,smart-turn,bundle"  # what the installers ship: Chinese, Smart Turn's ONNX (off by default); PyInstaller
[[ "${IC_BUNDLE_LLM:-1}" != 0 ]] && extras="local,$extras"
[[ "${1:-}" == "--dev" ]] && extras="$extras,dev"
VPY="$VPY" bash packaging/install_locked.sh "$extras"
"$VPY" -m pip list 2>/dev/null | grep -i -E "^(pyinstaller|llama|faster|ctranslate2|pyside6|openai) " || true
