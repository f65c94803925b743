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
