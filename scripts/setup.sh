#!/usr/bin/env bash
# Installs what tiny-pi needs on a Debian-like machine that has rustup and Node 20+.
#   bash scripts/setup.sh build   # what `npm start` / `npm run build` need
#   bash scripts/setup.sh test    # everything (`npm test`): + browsers and drivers
# Idempotent: every step checks first and skips in well under a second when done.
set -euo pipefail

NEED="${1:-test}"
case "$NEED" in build|test) ;; *) echo "usage: $0 [build|test]" >&2; exit 2 ;; esac

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
export DEBIAN_FRONTEND=noninteractive

CURRENT="" HINT=""
on_exit() {
  local rc=$?
  if [ "$rc" -ne 0 ] && [ -n "$CURRENT" ]; then
    echo "setup: FAILED at step \"$CURRENT\" (exit $rc)" >&2
    echo "setup: what to do: $HINT" >&2
  fi
}
trap on_exit EXIT

# step NAME HINT CMD...: announce, run, time. On failure `set -e` exits and on_exit names the step.
step() {
  CURRENT="$1" HINT="$2"; shift 2
  local t0=$EPOCHREALTIME
  echo "==> setup: $CURRENT"
  "$@"
  echo "    $CURRENT: $(elapsed "$t0")"
  CURRENT=""
}
elapsed() { awk -v a="$EPOCHREALTIME" -v b="$1" 'BEGIN { printf "%.1fs", a - b }'; }
skip() { echo "    already done: $*"; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# cargo install --locked, and if the crate's own lockfile pins a version that
# the registry no longer serves (yanked), resolve afresh instead of failing.
locked_install() {
  cargo install "$@" --locked && return 0
  echo "    --locked install failed (a pinned dependency may be yanked); retrying with fresh resolution"
  cargo install "$@"
}

# ---- build needs --------------------------------------------------------------
check_rust() {
  command -v cargo >/dev/null || return 1
  command -v rustup >/dev/null || return 1
  skip "$(cargo --version)"
}

wasm_target() {
  if rustup target list --installed | grep -qx wasm32-unknown-unknown; then
    skip "rustup target wasm32-unknown-unknown"
  else
    rustup target add wasm32-unknown-unknown
  fi
}

wasm_pack() {
  if command -v wasm-pack >/dev/null; then skip "$(wasm-pack --version)"; else locked_install wasm-pack; fi
}

lockfile() {
  if [ -f Cargo.lock ]; then skip "Cargo.lock exists"; else cargo generate-lockfile; fi
}

# The CLI must be exactly the wasm-bindgen version that Cargo.lock resolved.
bindgen_version() {
  awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock
}
wasm_bindgen_cli() {
  local want have
  want="$(bindgen_version)"
  [ -n "$want" ] || { echo "wasm-bindgen not found in Cargo.lock" >&2; return 1; }
  have="$(wasm-bindgen --version 2>/dev/null || true)"
  if [ "$have" = "wasm-bindgen $want" ]; then
    skip "$have"
  else
    echo "    have: ${have:-none}; installing wasm-bindgen-cli $want"
    locked_install wasm-bindgen-cli --version "$want" --force
  fi
}

npm_deps() {
  # node_modules is current when it was installed from this exact lockfile.
  local stamp=node_modules/.setup-stamp want
  want="$(sha256sum package-lock.json | cut -d' ' -f1)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    skip "node_modules matches package-lock.json"
  else
    npm ci --no-audit --no-fund
    echo "$want" > "$stamp"
  fi
}

# ---- test needs -----------------------------------------------------------------
# A CJK font too: without one the playground's Chinese screenshots show boxes (fonts-wqy-microhei: 1.6 MB).
browsers() {
  if command -v chromium >/dev/null && command -v chromedriver >/dev/null && command -v firefox-esr >/dev/null \
    && [ -f /usr/share/fonts/truetype/wqy/wqy-microhei.ttc ]; then
    skip "chromium, chromedriver, firefox-esr, fonts-wqy-microhei"
  else
    as_root apt-get update -qq
    as_root apt-get install -y -qq --no-install-recommends chromium chromium-driver firefox-esr fonts-wqy-microhei
  fi
}

gecko_driver() {
  if command -v geckodriver >/dev/null; then skip "$(geckodriver --version | head -1)"; else locked_install geckodriver; fi
}

T0=$EPOCHREALTIME
echo "setup ($NEED): $ROOT"
step "rust toolchain" "install rustup (https://rustup.rs) so that cargo and rustup are on PATH" check_rust
step "rustup target wasm32-unknown-unknown" "run: rustup target add wasm32-unknown-unknown" wasm_target
step "wasm-pack" "run: cargo install wasm-pack --locked (needs a C compiler: apt-get install build-essential)" wasm_pack
step "Cargo.lock" "run: cargo generate-lockfile, and check Cargo.toml parses" lockfile
step "wasm-bindgen-cli (version from Cargo.lock)" "run: cargo install wasm-bindgen-cli --version \$(version of wasm-bindgen in Cargo.lock) --locked" wasm_bindgen_cli
step "npm ci" "check network access to the npm registry, then: rm -rf node_modules && npm ci" npm_deps
if [ "$NEED" = test ]; then
  step "browsers (apt: chromium chromium-driver firefox-esr fonts-wqy-microhei)" "run as root: apt-get update && apt-get install chromium chromium-driver firefox-esr fonts-wqy-microhei" browsers
  step "geckodriver" "run: cargo install geckodriver --locked" gecko_driver
fi
echo "setup ($NEED): ready in $(elapsed "$T0")"
