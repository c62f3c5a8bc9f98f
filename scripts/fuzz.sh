#!/usr/bin/env bash
# Runs every fuzz target of the module, one at a time, for the given time (default 3s).
set -euo pipefail
fuzztime="${1:-3s}"
cd "$(dirname "$0")/.."
found=0
while IFS= read -r file; do
	dir="./$(dirname "$file")"
	for target in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)\(' "$file" | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(/\1/'); do
		found=$((found + 1))
		echo "fuzz $dir $target ($fuzztime)"
		go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime 5s "$dir"
	done
done < <(git ls-files --cached --others --exclude-standard '*_test.go' | sort)
echo "fuzz: $found targets ran"
