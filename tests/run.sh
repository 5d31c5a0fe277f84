#!/usr/bin/env bash
# Set up a fresh Debian/Ubuntu machine for the whole test suite, then run it.
#   bash tests/run.sh [pytest args]
# Installs the Debian packages the tests need when missing (PortAudio, espeak-ng, a
# private PulseAudio for the capture test, Qt's runtime libraries, Xvfb, a CJK font for the
# Chinese captions, flite for the held-out benchmark corpus), creates .venv,
# installs the app with its extras (the installers ship the same), checks style and types (also
# for Windows and macOS), runs pytest. The quick tier: bash tests/run.sh --fast [pytest args].
set -euo pipefail
cd "$(dirname "$0")/.."
pytest_args=("$@")
if [[ "${1:-}" == --fast ]]; then pytest_args=(-m "not slow" "${@:2}"); fi

DEBS=(
  libportaudio2 espeak-ng sox pulseaudio pulseaudio-utils libasound2-plugins
  libegl1 libgl1 libxkbcommon0 libfontconfig1 libdbus-1-3 libglib2.0-0
  xvfb xauth xdotool libxkbcommon-x11-0 libxcb-cursor0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1
  libxcb-randr0 libxcb-render-util0 libxcb-shape0 libxcb-xinerama0 libxcb-xfixes0 libx11-xcb1
  binutils nginx-light fonts-noto-cjk flite
)
missing=()
for pkg in "${DEBS[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
# Every library from uv.lock, hash-checked; llama-cpp-python compiled from its locked sdist once
# (the native CPU build crashes on some CPUs) into a wheel folder kept outside the checkout.
CMAKE_ARGS="-DGGML_NATIVE=OFF" IC_WHEEL_DIR="${IC_WHEEL_DIR:-$HOME/.cache/interview-copilot/wheels}" \
  VPY=.venv/bin/python bash packaging/install_locked.sh --editable local,zh,smart-turn,dev,bundle,diagnostics

.venv/bin/ruff check app devtools tests packaging
.venv/bin/mypy app devtools
.venv/bin/mypy --strict --platform win32 app
.venv/bin/mypy --strict --platform darwin app
exec .venv/bin/python -m pytest "${pytest_args[@]}"
