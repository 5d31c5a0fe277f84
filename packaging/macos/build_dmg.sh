#!/usr/bin/env bash
# macOS: build "Interview Copilot.app", sign it inside-out with the hardened runtime,
# notarize and staple it, then wrap it in a (signed, notarized, stapled) DMG:
#   dist/release/InterviewCopilot-<version>-macos-<arch>.dmg
#
# Every secret step runs only when its environment variables are set; otherwise it is
# skipped with a warning (the result then runs locally but Gatekeeper will block it on
# other Macs: right-click > Open, or System Settings > Privacy & Security > Open Anyway).
#
#   MACOS_SIGN_IDENTITY            "Developer ID Application: Name (TEAMID)"
#   MACOS_CERTIFICATE_P12_BASE64   optional: the Developer ID certificate + key (.p12, base64),
#   MACOS_CERTIFICATE_PASSWORD     imported into a temporary keychain (CI)
#   Notarization, either an app-specific password:
#     APPLE_ID, APPLE_TEAM_ID, APPLE_APP_PASSWORD
#   or an App Store Connect API key:
#     NOTARY_KEY_ID, NOTARY_ISSUER_ID, NOTARY_KEY_P8_BASE64
#
# Extra arguments are passed to packaging/build.sh (e.g. --no-llm).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
[[ "$(uname -s)" == Darwin ]] || { echo "error: build_dmg.sh runs on macOS" >&2; exit 1; }

DIST="${DIST:-$ROOT/dist}"
export DIST
APP="$DIST/Interview Copilot.app"
ENTITLEMENTS="$ROOT/packaging/macos/entitlements.plist"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
VERSION="$("$PYTHON" -c 'import re; print(re.search(r"__version__\s*=\s*\"([^\"]+)\"", open("app/__init__.py").read()).group(1))')"
DMG="$DIST/release/InterviewCopilot-$VERSION-macos-$(uname -m).dmg"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

warn() { echo "WARNING: $*" >&2; }

# 1. Build the .app (onedir inside Contents/) and run its self-test before signing.
bash packaging/build.sh "$@"

# 1b. One macOS minimum: the highest LC_BUILD_VERSION minos of any binary in the app must
#     not exceed the LSMinimumSystemVersion the app declares (dyld would refuse to load it).
echo "== minimum macOS of every Mach-O binary vs. LSMinimumSystemVersion"
"$PYTHON" packaging/macos/minos.py --plist "$APP/Contents/Info.plist" "$APP"

# 2. Signing identity (optionally imported from CI secrets into a throwaway keychain).
IDENTITY="${MACOS_SIGN_IDENTITY:-}"
if [[ -n "${MACOS_CERTIFICATE_P12_BASE64:-}" ]]; then
  keychain="$TMP/signing.keychain-db"
  kc_pass="$(uuidgen)"
  security create-keychain -p "$kc_pass" "$keychain"
  security set-keychain-settings -lut 21600 "$keychain"
  security unlock-keychain -p "$kc_pass" "$keychain"
  echo "$MACOS_CERTIFICATE_P12_BASE64" | base64 --decode > "$TMP/cert.p12"
  security import "$TMP/cert.p12" -k "$keychain" -P "${MACOS_CERTIFICATE_PASSWORD:-}" -T /usr/bin/codesign
  security set-key-partition-list -S apple-tool:,apple: -s -k "$kc_pass" "$keychain" >/dev/null
  # shellcheck disable=SC2046
  security list-keychains -d user -s "$keychain" $(security list-keychains -d user | tr -d '"')
  rm -f "$TMP/cert.p12"
fi

sign() {  # path [extra codesign args]
  local target="$1"; shift
  codesign --force --timestamp --options runtime --sign "$IDENTITY" "$@" "$target"
}

if [[ -n "$IDENTITY" ]]; then
  echo "== signing inner code first (files, then Qt frameworks), then the app, with: $IDENTITY"
  main_exe="$APP/Contents/MacOS/interview-copilot"
  # Every Mach-O file except the main executable: dylibs, Python extensions, Qt framework binaries.
  while IFS= read -r -d '' file; do
    [[ "$file" == "$main_exe" ]] && continue
    if file -b "$file" | grep -q "Mach-O"; then
      if [[ -x "$file" && "$file" != *.dylib && "$file" != *.so ]]; then
        sign "$file" --entitlements "$ENTITLEMENTS"   # helper executables
      else
        sign "$file"
      fi
    fi
  done < <(find "$APP/Contents" -type f -print0)
  # Framework bundles (Qt) after their contents.
  while IFS= read -r -d '' framework; do sign "$framework"; done \
    < <(find "$APP/Contents" -type d -name "*.framework" ! -type l -print0)
  sign "$main_exe" --entitlements "$ENTITLEMENTS"
  sign "$APP" --entitlements "$ENTITLEMENTS"
  codesign --verify --deep --strict --verbose=2 "$APP"
  echo "== self-test of the signed app (hardened runtime, entitlements)"
  (cd / && env -i PATH=/usr/bin:/bin HOME="$HOME" LANG=C.UTF-8 QT_QPA_PLATFORM=offscreen "$main_exe" self-test)
else
  warn "MACOS_SIGN_IDENTITY not set: the app keeps PyInstaller's ad-hoc signature (no hardened runtime);"
  warn "Gatekeeper will block it on other Macs, and notarization is impossible."
fi

# 3. Notarize + staple the app.
notary_args=()
if [[ -n "${NOTARY_KEY_ID:-}" && -n "${NOTARY_ISSUER_ID:-}" && -n "${NOTARY_KEY_P8_BASE64:-}" ]]; then
  echo "$NOTARY_KEY_P8_BASE64" | base64 --decode > "$TMP/AuthKey.p8"
  notary_args=(--key "$TMP/AuthKey.p8" --key-id "$NOTARY_KEY_ID" --issuer "$NOTARY_ISSUER_ID")
elif [[ -n "${APPLE_ID:-}" && -n "${APPLE_TEAM_ID:-}" && -n "${APPLE_APP_PASSWORD:-}" ]]; then
  notary_args=(--apple-id "$APPLE_ID" --team-id "$APPLE_TEAM_ID" --password "$APPLE_APP_PASSWORD")
fi

notarize() {  # file-to-submit file-to-staple
  xcrun notarytool submit "$1" "${notary_args[@]}" --wait --timeout 45m
  xcrun stapler staple "$2"
  xcrun stapler validate "$2"
}

can_notarize=0
if [[ -n "$IDENTITY" && ${#notary_args[@]} -gt 0 ]]; then
  can_notarize=1
  echo "== notarizing the app"
  ditto -c -k --keepParent "$APP" "$TMP/app.zip"
  notarize "$TMP/app.zip" "$APP"
  spctl --assess --type execute --verbose=2 "$APP"
else
  warn "notarization skipped (needs MACOS_SIGN_IDENTITY and APPLE_ID/APPLE_TEAM_ID/APPLE_APP_PASSWORD"
  warn "or NOTARY_KEY_ID/NOTARY_ISSUER_ID/NOTARY_KEY_P8_BASE64)."
fi

# 4. The DMG: the app plus an /Applications link to drag it onto.
echo "== creating $DMG"
mkdir -p "$(dirname "$DMG")" "$TMP/dmg"
ditto "$APP" "$TMP/dmg/Interview Copilot.app"
ln -s /Applications "$TMP/dmg/Applications"
rm -f "$DMG"
hdiutil create -volname "Interview Copilot $VERSION" -srcfolder "$TMP/dmg" -fs HFS+ -format UDZO -ov "$DMG"
if [[ -n "$IDENTITY" ]]; then
  codesign --force --timestamp --sign "$IDENTITY" "$DMG"
fi
if [[ "$can_notarize" == 1 ]]; then
  echo "== notarizing the DMG"
  notarize "$DMG" "$DMG"
fi
echo "== done: $DMG ($(du -sm "$DMG" | cut -f1) MB)"
