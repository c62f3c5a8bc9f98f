#!/usr/bin/env bash
# Regenerates the summary table of docs/PERFORMANCE.md on this machine
# (`make bench-report`). Every row names its workload and its baseline, quotes
# the range over BENCH_COUNT runs (default 3; some benchmarks interleave their
# own rounds and give the range themselves) and the 1-minute load average
# before and after its runs. The table replaces the lines between the
# bench-report markers of docs/PERFORMANCE.md; with --print it goes to stdout
# only. The raw `go test -bench` output is kept in $BENCH_OUT (default a
# temporary directory, printed at the end).
#
# Knobs: BENCH_COUNT (runs per row, default 3), BENCH_ONLY (a regular
# expression on row groups: breaker, pgsim, demo, attack, results, collect,
# sim, experiments, fault), BENCH_OUT (keep the raw output there).
# Needs wrk and vegeta's CLI (scripts/bench-deps.sh installs both).
set -euo pipefail
cd "$(dirname "$0")/.."
print_only=0
if [ "${1:-}" = "--print" ]; then print_only=1; fi
count="${BENCH_COUNT:-3}"
only="${BENCH_ONLY:-.}"
out="${BENCH_OUT:-$(mktemp -d)}"
mkdir -p "$out"
export CBPROBE_PGSIM_ROUNDS="$count" # rounds inside the pgsim benchmarks
scripts/bench-deps.sh
gobin="$(go env GOPATH)/bin"
export PATH="$gobin:$PATH"
rows="$out/rows.md"
: >"$rows"

load1() { cut -d' ' -f1 /proc/loadavg; }

# bench GROUP NAME PKG REGEX [go test flags...]: runs the benchmark, keeps its
# output in $out/NAME.txt and the load averages in $out/NAME.load.
bench() {
	local group=$1 name=$2 pkg=$3 regex=$4
	shift 4
	if ! [[ $group =~ $only ]]; then return 1; fi
	local before
	before=$(load1)
	echo "bench: $name ($pkg -bench '$regex' $*), load $before" >&2
	go test -run '^$' -bench "$regex" "$@" "$pkg" >"$out/$name.txt" 2>&1 || {
		echo "bench: $name failed, see $out/$name.txt" >&2
		tail -20 "$out/$name.txt" >&2
	}
	echo "$before → $(load1)" >"$out/$name.load"
}

# metric NAME LINE_REGEX UNIT: "min–max" (or one value) of UNIT over the
# benchmark lines of NAME matching LINE_REGEX; "n/a" when there is none.
metric() {
	awk -v re="$2" -v unit="$3" '
		function fmt(v) {
			a = v < 0 ? -v : v
			if (a >= 100) return sprintf("%.0f", v)
			if (a >= 0.9 && a < 1.1) return sprintf("%.4f", v)
			if (a >= 10) return sprintf("%.1f", v)
			if (a >= 1) return sprintf("%.2f", v)
			return sprintf("%.3g", v)
		}
		$1 ~ /^Benchmark/ && $1 ~ re {
			for (i = 3; i <= NF; i++) if ($i == unit) {
				v = $(i - 1) + 0
				if (n == 0 || v < lo) lo = v
				if (n == 0 || v > hi) hi = v
				n++
			}
		}
		END {
			if (n == 0) { print "n/a"; exit }
			if (fmt(lo) == fmt(hi)) print fmt(lo); else print fmt(lo) "–" fmt(hi)
		}' "$out/$1.txt"
}

# hi NAME LINE_REGEX UNIT: the largest value (for a budget check), "" if none.
hi() {
	awk -v re="$2" -v unit="$3" '$1 ~ /^Benchmark/ && $1 ~ re {
		for (i = 3; i <= NF; i++) if ($i == unit) { v = $(i - 1) + 0; if (n == 0 || v > m) m = v; n++ } }
		END { if (n) print m }' "$out/$1.txt"
}
lo() {
	awk -v re="$2" -v unit="$3" '$1 ~ /^Benchmark/ && $1 ~ re {
		for (i = 3; i <= NF; i++) if ($i == unit) { v = $(i - 1) + 0; if (n == 0 || v < m) m = v; n++ } }
		END { if (n) print m }' "$out/$1.txt"
}

# span NAME LINE_REGEX BASE: "lo–hi" from the smallest BASE_min to the
# largest BASE_max (benchmarks that report their own rounds' range).
span() {
	local a z
	a=$(lo "$1" "$2" "$3_min")
	z=$(hi "$1" "$2" "$3_max")
	if [ -z "$a" ]; then echo "n/a"; return; fi
	awk -v a="$a" -v z="$z" 'function fmt(v) { x = v < 0 ? -v : v
		if (x >= 100) return sprintf("%.0f", v); if (x >= 0.9 && x < 1.1) return sprintf("%.4f", v)
		if (x >= 10) return sprintf("%.1f", v)
		if (x >= 1) return sprintf("%.2f", v); return sprintf("%.3g", v) }
		BEGIN { if (fmt(a) == fmt(z)) print fmt(a); else print fmt(a) "–" fmt(z) }'
}

# check VALUE OP BUDGET: "met" when the worst run (VALUE: the largest for <=,
# the smallest for >=) is within BUDGET, else "**not met**" with that value.
check() {
	if [ -z "$1" ]; then echo "n/a"; return; fi
	if awk -v v="$1" -v b="$3" -v op="$2" 'BEGIN { exit !((op == "<=" && v <= b) || (op == ">=" && v >= b)) }'; then
		echo "met"
	else
		echo "**not met** (worst $(awk -v v="$1" 'BEGIN { printf "%.3g", v }'))"
	fi
}

# row WHAT WORKLOAD BASELINE MEASURED STATUS NAME COMMAND
row() {
	# shellcheck disable=SC2016 # the backquotes are Markdown
	printf '| %s | %s | %s | %s | %s | %s | `%s` |\n' "$1" "$2" "$3" "$4" "$5" "$(cat "$out/$6.load")" "$7" >>"$rows"
}

# ---- breaker ----
if bench breaker breaker-acq ./breaker/ '^BenchmarkAcquireRecord$' -benchmem -count "$count"; then
	row "breaker: acquire + record, one goroutine (budget ≤ 150 ns, 0 allocs)" \
		"CLOSED COUNT_BASED window 20 full of fast successes, fast success with a constant 10 ms, no subscriber: **cbprobe's lock-free no-op path**" \
		"none (absolute budget)" \
		"$(metric breaker-acq . ns/op) ns/op, $(metric breaker-acq . allocs/op) allocs" \
		"$(check "$(hi breaker-acq . ns/op)" '<=' 150)" breaker-acq \
		"go test -run '^\$' -bench '^BenchmarkAcquireRecord\$' -benchmem -count $count ./breaker/"
fi
if bench breaker breaker-gob ./breaker/ '^BenchmarkVsGobreaker$' -count "$count"; then
	row "breaker vs sony/gobreaker/v2, all five workloads below: time ratio (cbprobe ÷ gobreaker)" "the range over the five workloads and all runs (the best row alone is cbprobe's lock-free path)" \
		"gobreaker v2, same calls, same process" "$(metric breaker-gob . ratio_vs_gobreaker)" \
		"$(check "$(hi breaker-gob . ratio_vs_gobreaker)" '<=' 1) (faster in every workload)" breaker-gob \
		"go test -run '^\$' -bench '^BenchmarkVsGobreaker\$' -count $count ./breaker/"
	for w in fast-success-const caller-measures 10pct-failures one-subscriber execute; do
		case $w in
		fast-success-const) desc="fast successes, duration passed as a constant" ;;
		caller-measures) desc="fast successes, the caller reads the clock around each call (time.Now/time.Since)" ;;
		10pct-failures) desc="every 10th call fails (constant 10 ms): every record changes the window" ;;
		one-subscriber) desc="fast successes with one event subscriber on cbprobe (gobreaker has no per-call events)" ;;
		execute) desc="both through Execute, the function returns nil" ;;
		esac
		lf=$(metric breaker-gob "/$w-" lockfree_path)
		case $lf in 1 | 1.00) desc="$desc; **cbprobe's lock-free no-op path**" ;; 0) desc="$desc; cbprobe takes its lock" ;; esac
		row "breaker vs sony/gobreaker/v2: time ratio (cbprobe ÷ gobreaker, below 1 is faster)" "$w: $desc" \
			"gobreaker v2 (TwoStep Allow + done; Execute in the last row), same calls, same process, 16 ABBA rounds (median of per-round ratios)" \
			"$(metric breaker-gob "/$w-" ratio_vs_gobreaker) (cbprobe $(metric breaker-gob "/$w-" cbprobe_ns/call) ns, gobreaker $(metric breaker-gob "/$w-" gobreaker_ns/call) ns)" \
			"$(check "$(hi breaker-gob "/$w-" ratio_vs_gobreaker)" '<=' 1)" breaker-gob \
			"go test -run '^\$' -bench '^BenchmarkVsGobreaker\$' -count $count ./breaker/"
	done
fi
if bench breaker breaker-par ./breaker/ '^BenchmarkParallelScaling$' -benchtime 1s -count "$count"; then
	row "breaker: 2 goroutines (GOMAXPROCS=2) total throughput ≥ one goroutine's" \
		"one breaker shared by 2 goroutines: fast-success (lock-free path) / mixed (10 % failures, 14 % slow: locked) / time-based" \
		"the same calls on 1 goroutine, GOMAXPROCS=1, alternating rounds; control: 2 goroutines on 2 breakers (ratio_unshared)" \
		"ratio_2g_vs_1g fast-success $(metric breaker-par fast-success ratio_2g_vs_1g), mixed $(metric breaker-par mixed ratio_2g_vs_1g), time-based $(metric breaker-par time-based ratio_2g_vs_1g); machine (ratio_unshared) $(metric breaker-par . ratio_unshared)" \
		"$(check "$(lo breaker-par fast-success ratio_2g_vs_1g)" '>=' 1) for fast-success; mixed $(check "$(lo breaker-par mixed ratio_2g_vs_1g)" '>=' 1)" breaker-par \
		"go test -run '^\$' -bench ParallelScaling -benchtime 1s -count $count ./breaker/"
fi
if bench breaker breaker-replay ./breaker/conformance/ '^BenchmarkReplayAll$' -count "$count"; then
	row "breaker: replay every conformance vector (budget well under 1 s)" "338 vectors, 33,570 steps, with a subscriber (locked paths)" "none (absolute budget)" \
		"$(metric breaker-replay . ns/op | awk -F'–' '{ for (i = 1; i <= NF; i++) printf "%s%.0f", (i > 1 ? "–" : ""), $i / 1e6 }') ms" \
		"$(check "$(hi breaker-replay . ns/op)" '<=' 1e9)" breaker-replay \
		"go test -run '^\$' -bench ReplayAll -count $count ./breaker/conformance/"
fi

# ---- pgsim ----
if bench pgsim pgsim-wrk ./pgsim/ '^BenchmarkWrkVsBare$' -benchtime 1x -timeout 30m; then
	row "pgsim throughput ÷ a bare handler (budget ≥ 0.8)" \
		"wrk -t1 -c16 for 5 s (closed loop) in its own process; pgsim as shipped (zero latency and errors, settlement callbacks on to a live receiver, all awaited) in its own process" \
		"bare net/http handler, same JSON decode and envelope, **no callbacks**, own process; arms rotated per round" \
		"$(span pgsim-wrk . ratio_vs_bare) (pgsim $(metric pgsim-wrk . pgsim_req/s) req/s at $(metric pgsim-wrk . pgsim_cpu_us/req) µs CPU/req; bare $(metric pgsim-wrk . bare_req/s) req/s at $(metric pgsim-wrk . bare_cpu_us/req) µs CPU/req; mean of $count rounds)" \
		"$(check "$(lo pgsim-wrk . ratio_vs_bare_min)" '>=' 0.8)" pgsim-wrk \
		"go test -run '^\$' -bench WrkVsBare -benchtime 1x ./pgsim/"
	row "pgsim throughput ÷ a bare handler doing the same callbacks" \
		"as above" \
		"bare handler that posts the same callback 1–5 s after each payment from its timer goroutine on one pooled client (at most 64 connections, as pgsim's 64 workers), own process" \
		"$(span pgsim-wrk . ratio_vs_barecb) (bare+callbacks $(metric pgsim-wrk . barecb_req/s) req/s at $(metric pgsim-wrk . barecb_cpu_us/req) µs CPU/req, callbacks not delivered $(metric pgsim-wrk . barecb_undelivered), lag max $(metric pgsim-wrk . barecb_lag_max_ms) ms; pgsim: not delivered $(metric pgsim-wrk . pgsim_undelivered), lag max $(metric pgsim-wrk . pgsim_lag_max_ms) ms)" \
		"stated" pgsim-wrk \
		"go test -run '^\$' -bench WrkVsBare -benchtime 1x ./pgsim/"
fi
if bench pgsim pgsim-rate ./pgsim/ '^BenchmarkCallbackRate$' -benchtime 1x -timeout 60m; then
	rates=""
	while read -r r; do
		rates="$rates; $r/s: sent $(metric pgsim-rate . "pgsim_${r}_achieved_min") of target (min), lag max $(metric pgsim-rate . "pgsim_${r}_lag_max_ms") ms, $(metric pgsim-rate . "pgsim_${r}_cpu_us_min")–$(metric pgsim-rate . "pgsim_${r}_cpu_us_max") µs CPU/payment (bare+callbacks: lag max $(metric pgsim-rate . "barecb_${r}_lag_max_ms") ms, not delivered $(metric pgsim-rate . "barecb_${r}_undelivered_max"))"
	done < <(grep -o 'pgsim_[0-9]*_lag_max_ms' "$out/pgsim-rate.txt" | sed 's/pgsim_\([0-9]*\)_.*/\1/' | sort -un)
	row "pgsim: settlement callbacks sustained on time (every callback within its 1–5 s settlement + 1 s)" \
		"vegeta CLI at a fixed payment rate for 12 s (own process), pgsim as shipped in its own process, receiver answering at once; all callbacks awaited" \
		"bare handler posting the same callbacks on a pooled client, interleaved at each rate" \
		"**$(metric pgsim-rate . sustained_per_s) callbacks/s** sustained in every round${rates}" \
		"stated" pgsim-rate \
		"go test -run '^\$' -bench CallbackRate -benchtime 1x ./pgsim/"
fi
if bench pgsim pgsim-lat ./pgsim/ '^BenchmarkLatencyAccuracy$' -benchtime 1x -count "$count"; then
	row "pgsim injected latency at 2,000 req/s: p99 of actual − intended (budget ≤ 2 ms)" \
		"open loop 2,000 req/s for 2 s, fixed 50 ms latency, in-process Go client" \
		"bare handler that time.Sleeps 50 ms, same process, alternating" \
		"pgsim p99 over $(metric pgsim-lat . p99_over_ms) ms; baseline p99 over $(metric pgsim-lat . base_p99_over_ms) ms; server-side p99 over $(metric pgsim-lat . server_p99_over_ms) ms" \
		"$(check "$(hi pgsim-lat . p99_over_ms)" '<=' 2)" pgsim-lat \
		"go test -run '^\$' -bench LatencyAccuracy -benchtime 1x -count $count ./pgsim/"
fi
if bench pgsim pgsim-mem ./pgsim/ '^BenchmarkAttemptLogMemory$' -benchtime 1x -count 1; then
	row "pgsim: 1M logged attempts (budget ≤ 300 MB)" "1,000,000 attempts, each on a fresh orderId (worst case)" "none (absolute budget)" \
		"$(metric pgsim-mem . MB_per_1M) MB ($(metric pgsim-mem . bytes/attempt) B/attempt; deterministic, one run)" \
		"$(check "$(hi pgsim-mem . MB_per_1M)" '<=' 300)" pgsim-mem \
		"go test -run '^\$' -bench AttemptLogMemory -benchtime 1x ./pgsim/"
fi

# ---- demo ----
if bench demo demo-pay ./demo/ '^BenchmarkPaymentOverhead$' -benchtime 1x -count "$count"; then
	row "demo adds ≤ 1 ms to the p99 of a direct gateway call at 1,000 payments/s" \
		"1,000 payments/s for 2 s (open loop, in-process client) through Retry(CircuitBreaker(TimeLimiter(call))), zero-latency gateway" \
		"the direct gateway call with the same body, interleaved, same process" \
		"p99 delta $(metric demo-pay . p99-delta-ms) ms (p99 direct $(metric demo-pay . p99-direct-ms) ms); p50 delta $(metric demo-pay . p50-delta-ms) ms" \
		"$(check "$(hi demo-pay . p99-delta-ms)" '<=' 1)" demo-pay \
		"go test -run '^\$' -bench PaymentOverhead -benchtime 1x -count $count ./demo/"
fi
if bench demo demo-prom ./demo/ '^BenchmarkPrometheus10Breakers$' -benchtime 2000x -count "$count"; then
	row "demo /actuator/prometheus for 10 breakers (budget ≤ 1 ms)" "render 10 breakers with full windows + limiter + retry (20.7 KB)" "none (absolute budget)" \
		"$(metric demo-prom . ms/scrape) ms/scrape" "$(check "$(hi demo-prom . ms/scrape)" '<=' 1)" demo-prom \
		"go test -run '^\$' -bench Prometheus -benchtime 2000x -count $count ./demo/"
fi

# ---- attack ----
if bench attack attack-cpu ./attack/ '^BenchmarkAttackCPU$' -benchtime 1x -count "$count"; then
	row "attack: CPU ≤ 1.05× plain vegeta; achieved rate within 1 % of 5,000 req/s" \
		"5,000 GET/s, 3 s per engine in ABBA rounds of 1 s, each round a fresh process; cbprobe with its requests.csv encoding; zero-latency target in its own process" \
		"plain vegeta v12.13.0 library, ConstantPacer, same client settings" \
		"cpu-ratio $(metric attack-cpu . cpu-ratio) (median of rounds $(metric attack-cpu . cpu-ratio-median)); achieved cbprobe $(metric attack-cpu . cbprobe-achieved/target), vegeta $(metric attack-cpu . vegeta-achieved/target); cbprobe dropped $(metric attack-cpu . cbprobe-dropped); p99 cbprobe $(metric attack-cpu . cbprobe-p99-ms) ms, vegeta $(metric attack-cpu . vegeta-p99-ms) ms" \
		"$(check "$(hi attack-cpu . cpu-ratio)" '<=' 1.05)" attack-cpu \
		"go test -run '^\$' -bench AttackCPU -benchtime 1x -count $count ./attack/"
fi

# ---- results ----
if bench results results-disk ./results/ '^BenchmarkAppendSlowDisk$' -benchtime 5x -count 1; then
	row "results: writing never blocks the attack" "rows appended while the disk stalls" "synchronous writes to the same slow disk" \
		"queued $(metric results-disk . ns/request-queued) ns/request, sync ÷ queued $(metric results-disk . sync/queued), backlog up to $(metric results-disk . max-backlog) rows" \
		"stated" results-disk "go test -run '^\$' -bench AppendSlowDisk -benchtime 5x ./results/"
fi

# ---- collect ----
if bench collect collect-parse ./collect/ '^BenchmarkParsePrometheus2000$' -benchtime 300x -count "$count"; then
	row "collect: parse 2,000 series ≤ 1.2× expfmt alone" "2,000 Prometheus series (micrometer text)" "prometheus/common expfmt TextParser alone, same input, same process" \
		"$(metric collect-parse . x-expfmt)× expfmt" "$(check "$(hi collect-parse . x-expfmt)" '<=' 1.2)" collect-parse \
		"go test -run '^\$' -bench 'ParsePrometheus2000\$' -benchtime 300x -count $count ./collect/"
fi
if bench collect collect-cpu ./collect/ '^BenchmarkSamplerCPU(Busy)?$' -benchtime 1x -count "$count"; then
	row "collect: sampler at 50 ms against the demo < 2 % of one core" "the demo in a child process, idle / busy (events flowing); only the sampler's CPU counted" "none (absolute budget)" \
		"idle $(metric collect-cpu 'SamplerCPU-' %core) %, busy $(metric collect-cpu SamplerCPUBusy %core) %" \
		"$(check "$(hi collect-cpu . %core)" '<=' 2)" collect-cpu \
		"go test -run '^\$' -bench SamplerCPU -benchtime 1x -count $count ./collect/"
fi
if bench collect collect-lag ./collect/ '^BenchmarkDetectionLag$' -benchtime 1x -count "$count"; then
	row "collect: transition detection lag" "a fake actuator flips CLOSED→OPEN, detection by polling at 100 ms" "one poll interval (expected ≈ 50 ms mean)" \
		"mean $(metric collect-lag . mean-lag-ms) ms, max $(metric collect-lag . max-lag-ms) ms" "stated" collect-lag \
		"go test -run '^\$' -bench DetectionLag -benchtime 1x -count $count ./collect/"
fi

# ---- sim ----
if bench sim sim ./sim/ '^BenchmarkPredict' -benchtime 3x -count 1 -cpu 2; then
	row "sim: 10,000 runs of the sequential 40-request arm ≤ 2 s; 1,000 window-type runs ≤ 2 s" "cbprobe predict's Monte Carlo, reference arm / window-type arms" "none (absolute budget); speedup_vs_serial beside" \
		"sequential $(metric sim Sequential40 s/predict) s; window-type COUNT_BASED $(metric sim COUNT_BASED s/predict) s, TIME_BASED $(metric sim TIME_BASED s/predict) s" \
		"$(check "$(hi sim . s/predict)" '<=' 2)" sim \
		"go test -run '^\$' -bench Predict -benchtime 3x -cpu 2 ./sim/"
fi

# ---- experiments ----
if [[ experiments =~ $only ]]; then
	go build -o "$out/cbprobe" ./cmd/cbprobe
	before=$(load1)
	times=""
	for e in retry window-type slow-call; do
		s=$(date +%s.%N)
		"$out/cbprobe" experiment "$e" --speed 20 -q --out "$out/exp-$e" >/dev/null 2>&1 || true
		times="$times $e $(awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s,"
	done
	echo "$before → $(load1)" >"$out/experiments.load"
	times=${times%,}
	worst=$(echo "$times" | tr ',' '\n' | awk '{ if ($2 > m) m = $2 } END { print m }')
	row "experiments at --speed 20 < 10 s each" "the three named experiments, embedded setup, one run each" "none (absolute budget)" \
		"${times# }" "$(check "$worst" '<=' 10)" experiments "time cbprobe experiment NAME --speed 20 -q"
fi

# ---- fault ----
if bench fault fault ./fault/ '^Benchmark(ThroughputVsReverseProxy|AddedLatencyAt1000|AddedLatencyPaired)$' -benchtime 1x -count "$count"; then
	row "fault, no fault active: throughput ≥ 0.8× httputil.ReverseProxy" "vegeta CLI -rate=0 -workers=32 (own process), 64-byte upstream, 4 interleaved pairs of 2 s" \
		"httputil.NewSingleHostReverseProxy with the same transport" \
		"$(metric fault ThroughputVsReverseProxy ratio) (fault $(metric fault ThroughputVsReverseProxy fault_req/s) req/s, ReverseProxy $(metric fault ThroughputVsReverseProxy rp_req/s) req/s)" \
		"$(check "$(lo fault ThroughputVsReverseProxy ratio)" '>=' 0.8)" fault \
		"go test -run '^\$' -bench ThroughputVsReverseProxy -benchtime 1x -count $count ./fault/"
	row "fault, no fault active: adds ≤ 1 ms p99 at 1,000 req/s (paired)" "one vegeta CLI attack (own process) alternating request by request between the upstream and fault, 1,000 req/s each, 3 s; then the same with ReverseProxy; 3 rounds" \
		"the upstream called directly in the same window, each direct request 0.5 ms before its proxied twin; ReverseProxy beside" \
		"p99(fault) − p99(direct) $(span fault AddedLatencyPaired fault_added_p99_ms) ms; p99 of per-pair differences $(span fault AddedLatencyPaired fault_pair_p99_ms) ms; added p50 $(span fault AddedLatencyPaired fault_added_p50_ms) ms; ReverseProxy $(span fault AddedLatencyPaired rp_added_p99_ms) ms (pairs $(span fault AddedLatencyPaired rp_pair_p99_ms) ms); direct p99 itself $(span fault AddedLatencyPaired direct_p99_ms) ms" \
		"$(check "$(hi fault AddedLatencyPaired fault_added_p99_ms_max)" '<=' 1)" fault \
		"go test -run '^\$' -bench AddedLatencyPaired -benchtime 1x -count $count ./fault/"
	row "fault, no fault active: adds ≤ 1 ms p99 at 1,000 req/s (separate windows)" "vegeta CLI -rate=1000 for 3 s per arm (own process), order rotated over 3 rounds, median of the rounds' p99" \
		"the upstream called directly in its own window; ReverseProxy beside" \
		"added p99 $(metric fault AddedLatencyAt1000 fault_added_p99_ms) ms (ReverseProxy $(metric fault AddedLatencyAt1000 rp_added_p99_ms) ms; direct p99 $(metric fault AddedLatencyAt1000 direct_p99_ms) ms); added p50 $(metric fault AddedLatencyAt1000 fault_added_p50_ms) ms" \
		"$(check "$(hi fault AddedLatencyAt1000 fault_added_p99_ms)" '<=' 1) (the windows' own noise: see the fault section)" fault \
		"go test -run '^\$' -bench AddedLatencyAt1000 -benchtime 1x -count $count ./fault/"
fi

{
	echo "<!-- bench-report:start (generated by scripts/bench.sh; edit the script, not this table) -->"
	echo
	echo "Generated $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) CPUs ($(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)), $(go version | cut -d' ' -f3-4), BENCH_COUNT=$count. Ranges are min–max over the runs; \"load\" is the 1-minute load average before → after the row's runs."
	echo
	echo "| target | workload | baseline | measured | status | load | command |"
	echo "|---|---|---|---|---|---|---|"
	cat "$rows"
	echo
	echo "<!-- bench-report:end -->"
} >"$out/table.md"

if [ "$print_only" = 1 ]; then
	cat "$out/table.md"
elif [ "$only" != "." ]; then
	echo "bench: BENCH_ONLY set, docs/PERFORMANCE.md left as it is; table in $out/table.md" >&2
	cat "$out/table.md"
else
	awk -v table="$out/table.md" '
		/<!-- bench-report:start/ { while ((getline l < table) > 0) print l; skip = 1; next }
		/<!-- bench-report:end -->/ { skip = 0; next }
		!skip { print }' docs/PERFORMANCE.md >"$out/PERFORMANCE.md"
	if ! grep -q 'bench-report:start' "$out/PERFORMANCE.md"; then
		echo "bench: docs/PERFORMANCE.md has no bench-report markers" >&2
		exit 1
	fi
	cp "$out/PERFORMANCE.md" docs/PERFORMANCE.md
	echo "bench: docs/PERFORMANCE.md summary table regenerated" >&2
fi
echo "bench: raw output in $out" >&2
