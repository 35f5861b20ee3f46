#!/usr/bin/env bash
# `npm test`: installs what is missing, then runs every suite in order, each
# announced and timed, and ends with a summary table and `N passed, N failed`.
# Uses nothing from node_modules before setup has run `npm ci`.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export PATH="$ROOT/node_modules/.bin:${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
LOGS="$(mktemp -d "${TMPDIR:-/tmp}/tiny-pi-test.XXXXXX")"
trap 'rm -rf "$LOGS"' EXIT

T0=$EPOCHREALTIME
elapsed() { awk -v a="$EPOCHREALTIME" -v b="$1" 'BEGIN { printf "%.1f", a - b }'; }

bash scripts/setup.sh test

ROWS=() TOTAL_PASS=0 TOTAL_FAIL=0 FAILED_SUITES=()

# Counts from a log: "pass fail", or nothing when the runner printed no counts.
#   cargo / wasm-bindgen-test-runner: "test result: ok. 3 passed; 0 failed; ..."
#   node --test (spec or tap reporter): "ℹ pass 3" / "# pass 3"
count_cargo() {
  awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed;?/) p += $i; if ($(i+1) ~ /^failed;?/) f += $i } n++ }
       END { if (n) print p + 0, f + 0 }' "$1"
}
count_node() {
  awk '/^(ℹ|#) pass [0-9]+$/ { p = $3; n++ } /^(ℹ|#) fail [0-9]+$/ { f = $3 }
       END { if (n) print p + 0, f + 0 }' "$1"
}

# suite NAME COUNTER CMD...: run, tee the output to a log, record counts and time.
# A suite without counts (e.g. the build) counts as 1 failed when it fails.
suite() {
  local name="$1" counter="$2"; shift 2
  local log="$LOGS/${#ROWS[@]}.log" t=$EPOCHREALTIME rc=0 pass="-" fail="-" counts
  echo
  echo "==================== suite: $name ===================="
  echo "\$ $*"
  set +e
  "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  counts="$([ "$counter" = none ] || "$counter" "$log")"
  if [ -n "$counts" ]; then
    read -r pass fail <<<"$counts"
    TOTAL_PASS=$((TOTAL_PASS + pass)) TOTAL_FAIL=$((TOTAL_FAIL + fail))
  fi
  local result=ok
  if [ "$rc" -ne 0 ]; then
    result="FAILED (exit $rc)"
    FAILED_SUITES+=("$name")
    # Make sure a failing suite shows up in the closing count even if its runner printed no counts.
    if [ -z "$counts" ] || [ "$fail" -eq 0 ]; then TOTAL_FAIL=$((TOTAL_FAIL + 1)); fail=$(( ${fail/-/0} + 1 )); fi
    echo "suite \"$name\" FAILED (exit $rc); rerun it alone with: $*"
  fi
  local secs; secs="$(elapsed "$t")"
  echo "---- $name: $result in ${secs}s"
  ROWS+=("$(printf '%-34s %-18s %7s %7s %8ss' "$name" "$result" "$pass" "$fail" "$secs")")
}

# A test folder that is gone or holds no test files fails: a renamed folder must not pass by running nothing.
no_tests_suite() {
  echo
  echo "==================== suite: $1 ===================="
  echo "FAILED: $2"
  FAILED_SUITES+=("$1")
  TOTAL_FAIL=$((TOTAL_FAIL + 1))
  ROWS+=("$(printf '%-34s %-18s %7s %7s %9s' "$1" "FAILED (no tests)" "-" "1" "-")")
}

# Runs a node --test folder, which must hold test files (*.test.mjs etc.).
node_suite() {
  local dir="$1" files=()
  if [ -d "$dir" ]; then
    # The files are named on the command line: Node 21+ reads a folder argument as a file path, not a folder.
    mapfile -t files < <(find "$dir" -name node_modules -prune -o -type f \( -name '*.test.mjs' -o -name '*.test.js' -o -name '*.test.cjs' \) -print | sort)
  fi
  if [ ! -d "$dir" ]; then
    no_tests_suite "node --test $dir/" "$dir/ does not exist"
  elif [ ${#files[@]} -eq 0 ]; then
    no_tests_suite "node --test $dir/" "$dir/ has no *.test.mjs files"
  else
    suite "node --test $dir/" count_node node --test --test-reporter=spec "${files[@]}"
  fi
}

# setup.sh installed both; an environment that names its own drivers keeps them.
CHROMEDRIVER="${CHROMEDRIVER:-$(command -v chromedriver)}"
GECKODRIVER="${GECKODRIVER:-$(command -v geckodriver)}"
export CHROMEDRIVER GECKODRIVER

suite "cargo test (native)" count_cargo cargo test
suite "build pkg/ (scripts/build.mjs)" none node scripts/build.mjs
suite "build dist/ (scripts/site.mjs)" none node scripts/site.mjs
suite "wasm-pack test --chrome" count_cargo wasm-pack test --mode no-install --headless --chrome --chromedriver "$CHROMEDRIVER"
suite "wasm-pack test --firefox" count_cargo wasm-pack test --mode no-install --headless --firefox --geckodriver "$GECKODRIVER"
node_suite tests/node
node_suite tests/e2e

echo
echo "==================== summary ===================="
printf '%-34s %-18s %7s %7s %9s\n' "suite" "result" "passed" "failed" "time"
printf '%s\n' "${ROWS[@]}"
echo "total time: $(elapsed "$T0")s"
if [ ${#FAILED_SUITES[@]} -gt 0 ]; then
  echo "failed suites: $(IFS=,; echo "${FAILED_SUITES[*]}")"
fi
echo "$TOTAL_PASS passed, $TOTAL_FAIL failed"
[ ${#FAILED_SUITES[@]} -eq 0 ]
