#!/usr/bin/env bash
# Runs every fuzz target of the given Go modules (default: the repository's
# root module and each module under examples/) for a bounded time each, one
# after another: Go fuzzes one target of one package per invocation.
# Targets are found by `go list` and the test files' `func FuzzX(` lines, so
# a new one is run without editing a list. Every target runs whatever the
# others do; the exit status is 1 if any failed, and a failure shows where
# Go wrote the failing input (testdata/fuzz/FuzzX/<hash> beside the target),
# which committed stays a regression seed that `go test` runs every time.
#
# FUZZTIME      how long each target fuzzes (go test -fuzztime), default 5s
# FUZZPARALLEL  fuzzing workers per target (go test -parallel), default 1
# FUZZTIMEOUT   when a target's run is cut off as hung (go test -timeout),
#               default 10m; raise it with FUZZTIME
# FUZZBUDGET    seconds for the whole run, 0 (the default) for none. With a
#               budget the targets start at one chosen by the commit (so
#               successive commits give each its turn first) and the run
#               stops starting targets once the budget is spent, cutting
#               off the one under way; the targets not run are listed, and
#               are not failures. Fuzzing builds every package once more,
#               instrumented: on an empty build cache that alone takes
#               minutes, and a budget keeps CI within its time.
# GO            the go command, default go
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
root=$PWD

GO=${GO:-go}
FUZZTIME=${FUZZTIME:-5s}
FUZZPARALLEL=${FUZZPARALLEL:-1}
FUZZTIMEOUT=${FUZZTIMEOUT:-10m}
FUZZBUDGET=${FUZZBUDGET:-0}
case $FUZZBUDGET in
'' | *[!0-9]*)
  echo "fuzz: FUZZBUDGET must be a number of seconds, not $FUZZBUDGET" >&2
  exit 2
  ;;
esac

if [ "$#" -eq 0 ]; then
  set -- .
  for mod in examples/*/go.mod; do
    [ -e "$mod" ] && set -- "$@" "$(dirname "$mod")"
  done
fi

# targets lists "module dir<TAB>package dir<TAB>FuzzX", one a line, for
# each fuzz target in the test files of the packages of the modules.
targets() {
  local mod dir files f fn
  for mod in "$@"; do
    mod=$(cd "$mod" && pwd) || return 1
    (cd "$mod" && "$GO" list -f '{{.Dir}}{{"\t"}}{{join .TestGoFiles " "}} {{join .XTestGoFiles " "}}' ./...) |
      while IFS=$'\t' read -r dir files; do
        for f in $files; do
          sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$dir/$f"
        done | sort -u | while read -r fn; do
          printf '%s\t%s\t%s\n' "$mod" "$dir" "$fn"
        done
      done || return 1
  done
}

# rel prints path $2 relative to folder $1 when it is inside it.
rel() {
  case $2 in
  "$1") echo . ;;
  "$1"/*) echo "${2#"$1"/}" ;;
  *) echo "$2" ;;
  esac
}

list=$(targets "$@") || exit 1
n=$(printf '%s\n' "$list" | grep -c .)
if [ "$n" -eq 0 ]; then
  echo "fuzz: no fuzz targets in $*"
  exit 0
fi
if [ "$FUZZBUDGET" -gt 0 ]; then
  head=$(git rev-parse --short=7 HEAD 2>/dev/null || echo 0)
  first=$((16#$head % n))
  list=$(printf '%s\n' "$list" | awk -v first="$first" -v n="$n" '{ t[NR - 1] = $0 } END { for (i = 0; i < n; i++) print t[(i + first) % n] }')
  echo "fuzz: $n targets, $FUZZTIME each, $FUZZPARALLEL worker(s), ${FUZZBUDGET}s in all, starting at target $((first + 1))"
else
  echo "fuzz: $n targets, $FUZZTIME each, $FUZZPARALLEL worker(s)"
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
i=0
failed=()
skipped=()
raced=()
start=$SECONDS
while IFS=$'\t' read -r mod dir fn; do
  i=$((i + 1))
  pkg=$(rel "$root" "$dir")
  limit=()
  if [ "$FUZZBUDGET" -gt 0 ]; then
    left=$((FUZZBUDGET - (SECONDS - start)))
    if [ "$left" -le 0 ]; then
      skipped+=("$pkg $fn")
      continue
    fi
    limit=(timeout --kill-after=10s "${left}s")
  fi
  printf '[%d/%d] %s %s ... ' "$i" "$n" "$pkg" "$fn"
  t0=$SECONDS
  (cd "$mod" && "${limit[@]}" "$GO" test -run='^$' -fuzz="^$fn\$" -fuzztime="$FUZZTIME" -parallel="$FUZZPARALLEL" -timeout="$FUZZTIMEOUT" "$dir") </dev/null >"$log" 2>&1
  rc=$?
  if [ "$rc" -eq 0 ]; then
    echo "ok ($((SECONDS - t0))s)"
    continue
  fi
  if [ "${#limit[@]}" -gt 0 ] && { [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; }; then
    echo "cut off: the budget is spent ($((SECONDS - t0))s)"
    skipped+=("$pkg $fn")
    continue
  fi
  # Go's fuzzing coordinator can report the end of -fuzztime itself as a
  # failure, "context deadline exceeded" with no failing input, when a
  # worker is mid-call as the time runs out (golang/go#75804, fixed after
  # Go 1.26). Every input found failing is written to testdata/fuzz, so a
  # run that wrote none and failed that way found nothing.
  if ! grep -q 'Failing input written to' "$log" && grep -qx '    context deadline exceeded' "$log"; then
    echo "ok ($((SECONDS - t0))s; Go's end-of-fuzztime race reported it failed, with no failing input)"
    raced+=("$pkg $fn")
    continue
  fi
  echo "FAIL ($((SECONDS - t0))s)"
  failed+=("$pkg $fn")
  sed 's/^/    /' "$log"
  input=$(sed -n 's/.*Failing input written to \(testdata\/fuzz\/[^ ]*\).*/\1/p' "$log" | head -n1)
  if [ -n "$input" ]; then
    echo "    failing input: $pkg/$input"
    run="go test -run='^${input#testdata/fuzz/}\$' ./$(rel "$mod" "$dir")"
    [ "$mod" = "$root" ] || run="(cd $(rel "$root" "$mod") && $run)"
    echo "    reproduce:     $run"
    echo "    commit it (with the fix) as a regression seed: git add $pkg/$input"
  fi
done <<<"$list"

echo "fuzz: $((n - ${#skipped[@]})) of $n targets in $((SECONDS - start))s, ${#failed[@]} failed"
for f in "${skipped[@]}"; do
  echo "  not run (budget spent): $f"
done
for f in "${raced[@]}"; do
  echo "  ok, though Go reported the end of its fuzz time as a failure (no failing input): $f"
done
for f in "${failed[@]}"; do
  echo "  FAIL $f"
done
[ "${#failed[@]}" -eq 0 ]
