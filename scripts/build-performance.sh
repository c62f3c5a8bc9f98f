#!/usr/bin/env bash
# Rebuilds docs/PERFORMANCE.md from the summary and each package's section in docs/perf/:
# each section's title becomes a level-2 heading and its inner headings move down to match
# (lines inside code fences are left alone).
set -euo pipefail
cd "$(dirname "$0")/.."
{
	cat docs/perf/00-summary.md
	for p in breaker pgsim demo attack results collect sim; do
		echo
		awk 'NR == 1 { shift = ($0 ~ /^# /) ? 1 : 0; sub(/^#+ /, "## "); print; next }
		     /^```/ { fence = !fence }
		     !fence && shift && /^#+ / { $0 = "#" $0 }
		     { print }' "docs/perf/$p.md"
	done
} > docs/PERFORMANCE.md
echo "docs/PERFORMANCE.md: $(wc -l < docs/PERFORMANCE.md) lines"
