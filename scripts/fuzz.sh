#!/usr/bin/env bash
# Runs every Go fuzz target of the module, one after another, for FUZZTIME
# each (default 20s; make test passes its own, shorter one).
#
# The targets are found, not listed: go list names each package's test
# files in this build (build constraints applied), and every
# `func FuzzXxx(f *testing.F)` they declare is a target: what
# `go test -list '^Fuzz'` lists, without linking every test binary first.
# FUZZ, a regular expression, picks some (FUZZ=Stream make fuzz).
#
# Each package's test binary is built once, instrumented for fuzzing
# (go test -c -fuzz), and run for each of its targets in the package's
# directory with the fuzz cache go test itself uses: linking is most of
# the time of a short run. A target that fails leaves its input in the
# package's testdata/fuzz/FuzzXxx/ and stops the run.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
FUZZTIME=${FUZZTIME:-20s}
FUZZ=${FUZZ:-.}
# A failing input is minimized for at most this long before it is reported.
FUZZMINIMIZETIME=${FUZZMINIMIZETIME:-10s}

mod=$($GO list -m)
cache=$($GO env GOCACHE)/fuzz
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT

pkgs=()                # packages with a target, in go list's order
declare -A dirs names  # package → its directory, its targets
count=0
# Each package with its test files in this build (build constraints
# applied by go list), then the fuzz functions they declare.
while read -r pkg dir files; do
  [[ -n $files ]] || continue
  # shellcheck disable=SC2086 # $files is a list of paths
  for name in $(cd "$dir" && sed -nE 's/^func (Fuzz[A-Za-z0-9_]*)\(f \*testing\.F\).*/\1/p' $files | sort -u); do
    [[ $name =~ $FUZZ ]] || continue
    if [[ -z ${names[$pkg]:-} ]]; then
      pkgs+=("$pkg")
      dirs[$pkg]=$dir
    fi
    names[$pkg]+=" $name"
    count=$((count + 1))
  done
done < <($GO list -f '{{.ImportPath}} {{.Dir}}{{range .TestGoFiles}} {{.}}{{end}}{{range .XTestGoFiles}} {{.}}{{end}}' ./...)

if [[ $count -eq 0 ]]; then
  echo "fuzz: no fuzz target matches FUZZ=$FUZZ" >&2
  exit 1
fi
echo "fuzz: $count targets in ${#pkgs[@]} packages, $FUZZTIME each"
start=$SECONDS
for pkg in "${pkgs[@]}"; do
  t0=$SECONDS
  exe=$bin/$(tr / _ <<<"$pkg").test
  if ! $GO test -c -fuzz=. -o "$exe" "$pkg"; then
    echo "fuzz: FAIL building $pkg" >&2
    exit 1
  fi
  printf 'fuzz: built %-67s %3ds\n' "${pkg#"$mod"/}" $((SECONDS - t0))
  for name in ${names[$pkg]}; do
    t0=$SECONDS
    fuzz() {
      (cd "${dirs[$pkg]}" && "$exe" -test.run='^$' -test.fuzz="^${name}\$" -test.fuzztime="$FUZZTIME" \
        -test.fuzzminimizetime="$FUZZMINIMIZETIME" -test.fuzzcachedir="$cache/$pkg" -test.paniconexit0 2>&1)
    }
    ok=true
    out=$(fuzz) || ok=false
    # Go's fuzzing coordinator before 1.27 can report the end of
    # -fuzztime itself as a failure, "context deadline exceeded" with no
    # failing input (go.dev/issue/75804) when its workers are slow to
    # stop on a loaded machine: such a run is run once more. A target
    # that writes a failing input, or fails so twice, fails.
    if ! $ok && ! grep -q 'Failing input written to' <<<"$out" && grep -qx '    context deadline exceeded' <<<"$out"; then
      echo "fuzz: $name stopped with Go's fuzztime race (no failing input): running it again"
      ok=true
      out=$(fuzz) || ok=false
    fi
    if ! $ok; then
      echo "$out"
      if grep -q 'Failing input written to' <<<"$out"; then
        echo "fuzz: FAIL $name ($pkg): the failing input is in its testdata/fuzz/$name/" >&2
      else
        echo "fuzz: FAIL $name ($pkg)" >&2
      fi
      exit 1
    fi
    printf 'fuzz: ok    %-22s %-44s %3ds\n' "$name" "${pkg#"$mod"/}" $((SECONDS - t0))
  done
done
echo "fuzz: all $count targets passed in $((SECONDS - start))s"
