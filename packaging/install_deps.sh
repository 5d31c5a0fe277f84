#!/usr/bin/env bash
# Prepare a build machine: system packages (Linux CI only), .venv with the app, the local
# LLM extra and PyInstaller.  Runs on Linux, macOS and Windows (Git Bash).
#
#   PYTHON=python3.11 packaging/install_deps.sh
#
# llama-cpp-python is compiled from source here (CMAKE_ARGS=-DGGML_NATIVE=OFF, so the
# bundle runs on CPUs other than the build machine's).  PIP_FIND_LINKS=/path/to/wheels
# reuses a prebuilt wheel.  IC_BUNDLE_LLM=0 skips the local LLM entirely.
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
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}"
extras=".[zh]"
if [[ "${IC_BUNDLE_LLM:-1}" != 0 ]]; then
  extras=".[local,zh]"
fi
"$VPY" -m pip install "$extras" "pyinstaller>=6.10" "pyinstaller-hooks-contrib>=2024.8"
"$VPY" -m pip list 2>/dev/null | grep -i -E "^(pyinstaller|llama|faster|ctranslate2|pyside6|openai) " || true
