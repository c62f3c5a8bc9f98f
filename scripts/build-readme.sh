#!/usr/bin/env bash
# Rebuilds README.md from its sections in docs/readme/ (one file per command or topic).
set -euo pipefail
cd "$(dirname "$0")/.."
parts=(00-intro experiments ci sim demo pgsim results attack collect breaker springconf zz-development)
{
	for p in "${parts[@]}"; do
		cat "docs/readme/$p.md"
		echo
	done
} > README.md
echo "README.md: $(wc -l < README.md) lines from ${#parts[@]} sections"
