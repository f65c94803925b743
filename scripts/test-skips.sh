# Sourced by scripts/test-{rust,node,python}.sh, not run: the skip count each
# suite prints, and the backstop that fails CI on any skip. CI is on when `CI`
# is any non-empty string (the rule of every suite's "needs a service"
# helper: core/tests/service_support, tests/node/services.mjs,
# tests/python/services.py), so a skip there is already a failure; this
# catches a skip that bypassed the helper.

in_ci() {
  [[ -n "${CI:-}" ]]
}

# report_skips SUITE COUNT: prints "SUITE: COUNT skipped"; under CI, COUNT > 0
# is an error (status 1).
report_skips() {
  local suite=$1 count=$2
  [[ "$count" =~ ^[0-9]+$ ]] || { echo "$suite: cannot read the skip count (got '$count')" >&2; return 1; }
  echo "$suite: $count skipped"
  if (( count > 0 )) && in_ci; then
    echo "$suite: $count skipped under CI=$CI: nothing may be skipped in CI" >&2
    return 1
  fi
}

# node_tests SUITE FILE...: node --test on FILEs, the spec report on the
# terminal and the TAP report (its summary has "# skipped N", each skip's
# reason follows "# SKIP") into a file; then prints each skip and
# "SUITE: N skipped" (report_skips). node --test itself counts a skip as a pass.
node_tests() {
  local suite=$1 tap status=0
  shift
  tap=$(mktemp /tmp/sandbox-reclaim-node-tap.XXXXXX)
  node --test --test-reporter=spec --test-reporter-destination=stdout \
    --test-reporter=tap --test-reporter-destination="$tap" "$@" || status=$?
  if (( status == 0 )); then
    grep -F '# SKIP' "$tap" | sed 's/^ */  skipped: /' || true
    report_skips "$suite" "$(sed -n 's/^# skipped \([0-9][0-9]*\)$/\1/p' "$tap")" || status=$?
  fi
  rm -f "$tap"
  return "$status"
}

# pytest_tests SUITE PYTHON ARG...: PYTHON -m pytest -rs ARG..., its output
# shown and kept; then "SUITE: N skipped" (report_skips) from the summary's
# last line ("N passed, M skipped in ..."). pytest itself exits 0 on skips.
pytest_tests() {
  local - suite=$1 python=$2 log status=0
  set -o pipefail
  shift 2
  log=$(mktemp /tmp/sandbox-reclaim-pytest.XXXXXX)
  "$python" -m pytest -rs "$@" | tee "$log" || status=$?
  if (( status == 0 )); then
    report_skips "$suite" "$(tail -n 1 "$log" | grep -Eo '[0-9]+ skipped' | cut -d' ' -f1 || echo 0)" || status=$?
  fi
  rm -f "$log"
  return "$status"
}
