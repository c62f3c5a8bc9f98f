#!/usr/bin/env bash
# Runs every fuzz target of the module, one at a time, for the given time
# (argument, else $FUZZTIME, else 3s), and prints each target's executions, rate
# and wall time. Minimisation is bounded by $FUZZMINIMIZETIME, a time or a count
# such as 100x; the default 0 turns it off. At go test's default (60s a input) one
# target spent 50 of 60 s minimising at 0 execs/s, and even 1s or 100ms a new
# input left some targets at 11-63 execs in 3s: without it they run thousands.
# A failing input is still written to testdata/fuzz/FuzzX and reported; set
# FUZZMINIMIZETIME=10s to shrink it when reproducing.
# A failing target does not stop the others; the script fails at the end.
set -euo pipefail
fuzztime="${1:-${FUZZTIME:-3s}}"
minimize="${FUZZMINIMIZETIME:-0}"
cd "$(dirname "$0")/.."
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
found=0
failed=()
summary=()
start_all=$SECONDS
while IFS= read -r file; do
	dir="./$(dirname "$file")"
	mapfile -t targets < <(sed -nE 's/^func (Fuzz[A-Za-z0-9_]+)\(.*/\1/p' "$file")
	for target in "${targets[@]}"; do
		found=$((found + 1))
		echo "fuzz $dir $target ($fuzztime, minimise ${minimize})"
		start=$SECONDS
		status=ok
		if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" "$dir" 2>&1 | tee "$log"; then
			status=FAIL
			# Go 1.26's fuzz coordinator can report its own -fuzztime deadline as a
			# failure ("context deadline exceeded", no input written: go.dev/issue/75804,
			# fixed in Go 1.27). That, and only that, is run once more; a written
			# input, a panic or any other failure fails at once.
			if grep -qx '    context deadline exceeded' "$log" && ! grep -q 'Failing input written to' "$log" && ! grep -q '^panic:' "$log"; then
				echo "fuzz: $target: the fuzzing engine's own deadline race (go.dev/issue/75804), no input found: running it once more"
				if go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" "$dir" 2>&1 | tee "$log"; then
					status=ok-retried
				fi
			fi
			if [[ $status == FAIL ]]; then
				failed+=("$dir $target")
			fi
		fi
		# The last progress line: "fuzz: elapsed: 3s, execs: 8697 (2899/sec), new interesting: ..."
		# (its own rate is for the last interval; the mean over the run is execs / elapsed).
		last="$(grep -E '^fuzz: elapsed: [0-9]+s, execs: ' "$log" | tail -n 1 || true)"
		execs="$(sed -nE 's/.*execs: ([0-9]+).*/\1/p' <<<"$last")"
		elapsed="$(sed -nE 's/^fuzz: elapsed: ([0-9]+)s.*/\1/p' <<<"$last")"
		rate="?"
		if [[ -n "$execs" && -n "$elapsed" && "$elapsed" -gt 0 ]]; then
			rate=$((execs / elapsed))
		fi
		summary+=("$(printf '%-6s %-24s %-22s execs %-9s %7s/s  wall %ss' "$status" "$dir" "$target" "${execs:-?}" "$rate" "$((SECONDS - start))")")
	done
done < <(git ls-files --cached --others --exclude-standard '*_test.go' | sort)
echo
echo "fuzz summary (execs over the fuzzing time; wall time includes the build):"
printf '%s\n' "${summary[@]}"
echo "fuzz: $found targets ran in $((SECONDS - start_all))s, ${#failed[@]} failed"
if ((${#failed[@]} > 0)); then
	printf 'failed: %s\n' "${failed[@]}"
	exit 1
fi
