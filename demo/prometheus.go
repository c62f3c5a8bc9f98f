package demo

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/cbprobe/cbprobe/breaker"
)

// PromFormat selects the text format generation of /actuator/prometheus.
type PromFormat int

const (
	// PromCurrent is Prometheus client_java 1.x (Spring Boot >= 3.3): no trailing
	// comma in label sets, families sorted by name, samples sorted by labels,
	// summary counts as integers.
	PromCurrent PromFormat = iota
	// PromLegacy is simpleclient 0.x (Spring Boot <= 3.2): trailing commas, every
	// value as Double.toString, families and samples in registration order.
	PromLegacy
)

// ParsePromFormat parses "current" or "legacy".
func ParsePromFormat(s string) (PromFormat, error) {
	switch s {
	case "current", "":
		return PromCurrent, nil
	case "legacy":
		return PromLegacy, nil
	}
	return 0, fmt.Errorf("prometheus format %q: want current or legacy", s)
}

// String returns "current" or "legacy".
func (f PromFormat) String() string {
	if f == PromLegacy {
		return "legacy"
	}
	return "current"
}

// PromContentType is the Content-Type both generations answer with.
const PromContentType = "text/plain; version=0.0.4; charset=utf-8"

type promKind int

const (
	kindGauge promKind = iota
	kindCounter
	kindSummary
)

type label struct{ name, value string }

type promSample struct {
	labels []label // sorted by name
	value  float64
	sum    float64 // summaries: value is the count, sum the total
}

type promFamily struct {
	name    string // metadata name: no _total for counters
	help    string
	kind    promKind
	samples []promSample
}

// Meter help texts (Micrometer descriptions of the first meter registered), as
// the legacy generation (simpleclient) prints them.
const (
	helpState        = "The states of the circuit breaker"
	helpBuffered     = "The number of buffered failed calls stored in the ring buffer"
	helpSlowCalls    = "The number of slow successful which were slower than a certain threshold"
	helpFailureRate  = "The failure rate of the circuit breaker"
	helpSlowCallRate = "The slow call of the circuit breaker"
	helpCalls        = "Total number of successful calls"
	helpNotPermitted = "Total number of not permitted calls"
	helpTimeLimiter  = "The number of successful calls"
	helpRetry        = "The number of successful calls without a retry attempt"
)

// Help texts that differ in the current generation: measured on the Spring Boot
// 3.5.7 and 4.0.7 builds of examples/spring-commerce (docs/spring-parity.md).
const (
	helpBufferedCurrent    = "The number of buffered successful calls stored in the ring buffer"
	helpTimeLimiterCurrent = "The number of timed out calls"
	helpRetryCurrent       = "The number of failed calls without a retry attempt"
)

// Meters are the resilience4j meters of one scrape.
type Meters struct {
	// Breakers, TimeLimiters and Retries are the three registries' meters.
	Breakers     []BreakerView
	TimeLimiters []TimeLimiterView
	Retries      []RetryView
	// Bulkheads are thread-pool bulkheads; only the current generation prints them.
	Bulkheads []BulkheadView
	// SpringCloud adds the group tag Spring Cloud CircuitBreaker puts on every
	// resilience4j meter (current generation): group=<its own name> on breakers,
	// time limiters and bulkheads, which Spring Cloud creates with a group, and
	// group="none" (its default-group meter filter) on retries.
	SpringCloud bool
	// Tags are Micrometer common tags (for example application=commerce-api)
	// added to every sample; a meter's own tag wins.
	Tags map[string]string
}

// legacyStateOrder is the sample order of the state gauges in a real
// simpleclient scrape (fixtures/prometheus-selimhorri-ecommerce-sb2.txt).
func legacyStateOrder() []breaker.State {
	return []breaker.State{breaker.StateForcedOpen, breaker.StateClosed, breaker.StateDisabled,
		breaker.StateOpen, breaker.StateHalfOpen, breaker.StateMetricsOnly}
}

func stateTag(s breaker.State) string { return strings.ToLower(s.String()) }

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// buildFamilies lays out every resilience4j meter in registration order
// (the order the legacy generation prints).
func buildFamilies(f PromFormat, m Meters) []promFamily {
	cbs, tls, rts := m.Breakers, m.TimeLimiters, m.Retries
	notPermitted := promFamily{name: "resilience4j_circuitbreaker_not_permitted_calls", help: helpNotPermitted, kind: kindCounter}
	slowRate := promFamily{name: "resilience4j_circuitbreaker_slow_call_rate", help: helpSlowCallRate}
	slowCalls := promFamily{name: "resilience4j_circuitbreaker_slow_calls", help: helpSlowCalls}
	calls := promFamily{name: "resilience4j_circuitbreaker_calls_seconds", help: helpCalls, kind: kindSummary}
	callsMax := promFamily{name: "resilience4j_circuitbreaker_calls_seconds_max", help: helpCalls}
	buffered := promFamily{name: "resilience4j_circuitbreaker_buffered_calls", help: helpBuffered}
	state := promFamily{name: "resilience4j_circuitbreaker_state", help: helpState}
	failRate := promFamily{name: "resilience4j_circuitbreaker_failure_rate", help: helpFailureRate}
	kinds := [3]string{"successful", "failed", "ignored"}
	for _, v := range cbs {
		n := label{"name", v.Name}
		notPermitted.samples = append(notPermitted.samples, promSample{labels: []label{{"kind", "not_permitted"}, n}, value: v.NotPermittedTotal})
		slowRate.samples = append(slowRate.samples, promSample{labels: []label{n}, value: float64(v.SlowCallRate)})
		slowCalls.samples = append(slowCalls.samples,
			promSample{labels: []label{{"kind", "successful"}, n}, value: float64(v.SlowCalls - v.SlowFailedCalls)},
			promSample{labels: []label{{"kind", "failed"}, n}, value: float64(v.SlowFailedCalls)})
		for k, kind := range kinds {
			t := v.Calls[k]
			calls.samples = append(calls.samples, promSample{labels: []label{{"kind", kind}, n}, value: float64(t.Count), sum: t.Sum})
			callsMax.samples = append(callsMax.samples, promSample{labels: []label{{"kind", kind}, n}, value: t.Max})
		}
		buffered.samples = append(buffered.samples,
			promSample{labels: []label{{"kind", "successful"}, n}, value: float64(v.BufferedCalls - v.FailedCalls)},
			promSample{labels: []label{{"kind", "failed"}, n}, value: float64(v.FailedCalls)})
		for _, s := range legacyStateOrder() {
			state.samples = append(state.samples, promSample{labels: []label{n, {"state", stateTag(s)}}, value: b2f(v.State == s)})
		}
		failRate.samples = append(failRate.samples, promSample{labels: []label{n}, value: float64(v.FailureRate)})
	}
	current := f == PromCurrent
	if current {
		buffered.help = helpBufferedCurrent
	}
	var fams []promFamily
	if current {
		fams = append(fams, bulkheadFamilies(m.Bulkheads)...)
	}
	if len(cbs) > 0 {
		fams = append(fams, notPermitted, slowRate, slowCalls, calls, callsMax, buffered, state, failRate)
	}
	if len(tls) > 0 {
		tl := promFamily{name: "resilience4j_timelimiter_calls", help: helpTimeLimiter, kind: kindCounter}
		if current {
			tl.help = helpTimeLimiterCurrent
		}
		for _, v := range tls {
			n := label{"name", v.Name}
			tl.samples = append(tl.samples,
				promSample{labels: []label{{"kind", "successful"}, n}, value: v.Successful},
				promSample{labels: []label{{"kind", "failed"}, n}, value: v.Failed},
				promSample{labels: []label{{"kind", "timeout"}, n}, value: v.Timeout})
		}
		fams = append(fams, tl)
	}
	if len(rts) > 0 {
		rt := promFamily{name: "resilience4j_retry_calls", help: helpRetry, kind: kindCounter}
		if current {
			rt.help = helpRetryCurrent
		}
		for _, v := range rts {
			n := label{"name", v.Name}
			rt.samples = append(rt.samples,
				promSample{labels: []label{{"kind", "successful_with_retry"}, n}, value: v.SuccessfulWithRetry},
				promSample{labels: []label{{"kind", "failed_without_retry"}, n}, value: v.FailedWithoutRetry},
				promSample{labels: []label{{"kind", "failed_with_retry"}, n}, value: v.FailedWithRetry},
				promSample{labels: []label{{"kind", "successful_without_retry"}, n}, value: v.SuccessfulWithoutRetry})
		}
		fams = append(fams, rt)
	}
	if current && m.SpringCloud {
		for i := range fams {
			group := "none"
			if !strings.HasPrefix(fams[i].name, "resilience4j_retry") {
				group = "" // the meter's own name
			}
			for j := range fams[i].samples {
				fams[i].samples[j].labels = withGroup(fams[i].samples[j].labels, group)
			}
		}
	}
	return fams
}

// withGroup adds group=g (g empty: the name label's value) to sorted labels.
func withGroup(ls []label, g string) []label {
	if g == "" {
		for _, l := range ls {
			if l.name == "name" {
				g = l.value
			}
		}
	}
	out := append([]label{{"group", g}}, ls...)
	sort.SliceStable(out, func(x, y int) bool { return out[x].name < out[y].name })
	return out
}

// bulkheadFamilies are the thread-pool bulkhead gauges in the order the
// current generation registers them.
func bulkheadFamilies(bhs []BulkheadView) []promFamily {
	if len(bhs) == 0 {
		return nil
	}
	gauges := []struct {
		name, help string
		value      func(BulkheadView) int
	}{
		{"resilience4j_bulkhead_active_thread_count", "The number of active threads", func(v BulkheadView) int { return v.ActiveThreads }},
		{"resilience4j_bulkhead_available_thread_count", "The number of available threads", func(v BulkheadView) int { return v.AvailableThreads }},
		{"resilience4j_bulkhead_core_thread_pool_size", "The core thread pool size", func(v BulkheadView) int { return v.CoreThreads }},
		{"resilience4j_bulkhead_max_thread_pool_size", "The maximum thread pool size", func(v BulkheadView) int { return v.MaxThreads }},
		{"resilience4j_bulkhead_queue_capacity", "The queue capacity", func(v BulkheadView) int { return v.QueueCapacity }},
		{"resilience4j_bulkhead_queue_depth", "The queue depth", func(v BulkheadView) int { return v.QueueDepth }},
		{"resilience4j_bulkhead_thread_pool_size", "The thread pool size", func(v BulkheadView) int { return v.Threads }},
	}
	fams := make([]promFamily, len(gauges))
	for i, g := range gauges {
		fams[i] = promFamily{name: g.name, help: g.help}
		for _, v := range bhs {
			fams[i].samples = append(fams[i].samples, promSample{labels: []label{{"name", v.Name}}, value: float64(g.value(v))})
		}
	}
	return fams
}

// compareLabels orders label sets as client_java's Labels.compareTo: name by
// name, then value by value, shorter first.
func compareLabels(a, b []label) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := strings.Compare(a[i].name, b[i].name); c != 0 {
			return c
		}
		if c := strings.Compare(a[i].value, b[i].value); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

// RenderPrometheus appends the breaker, time limiter and retry meters in format f to b.
func RenderPrometheus(b []byte, f PromFormat, cbs []BreakerView, tls []TimeLimiterView, rts []RetryView) []byte {
	return RenderMeters(b, f, Meters{Breakers: cbs, TimeLimiters: tls, Retries: rts})
}

// RenderMeters appends the resilience4j meters m in format f to b; labels stay
// sorted by name.
func RenderMeters(b []byte, f PromFormat, m Meters) []byte {
	fams := buildFamilies(f, m)
	if tags := m.Tags; len(tags) > 0 {
		keys := sortedKeys(tags)
		for i := range fams {
			for j := range fams[i].samples {
				ls := fams[i].samples[j].labels
				for _, k := range keys {
					if !hasLabel(ls, k) { // a meter's own tag wins over a common tag
						ls = append(ls, label{k, tags[k]})
					}
				}
				sort.SliceStable(ls, func(x, y int) bool { return ls[x].name < ls[y].name })
				fams[i].samples[j].labels = ls
			}
		}
	}
	if f == PromCurrent {
		sort.SliceStable(fams, func(i, j int) bool { return fams[i].name < fams[j].name })
		for i := range fams {
			s := fams[i].samples
			sort.SliceStable(s, func(x, y int) bool { return compareLabels(s[x].labels, s[y].labels) < 0 })
		}
	}
	for _, fam := range fams {
		meta := fam.name
		typ := "gauge"
		switch fam.kind {
		case kindCounter:
			meta += "_total"
			typ = "counter"
		case kindSummary:
			typ = "summary"
		}
		b = append(b, "# HELP "...)
		b = append(b, meta...)
		b = append(b, ' ')
		b = append(b, fam.help...)
		b = append(b, "\n# TYPE "...)
		b = append(b, meta...)
		b = append(b, ' ')
		b = append(b, typ...)
		b = append(b, '\n')
		for _, s := range fam.samples {
			switch fam.kind {
			case kindSummary:
				b = appendSampleLine(b, f, fam.name+"_count", s.labels)
				if f == PromCurrent {
					b = appendInt(b, int64(s.value))
				} else {
					b = append(b, PromDouble(s.value)...)
				}
				b = append(b, '\n')
				b = appendSampleLine(b, f, fam.name+"_sum", s.labels)
				b = append(b, PromDouble(s.sum)...)
			default:
				b = appendSampleLine(b, f, meta, s.labels)
				b = append(b, PromDouble(s.value)...)
			}
			b = append(b, '\n')
		}
	}
	return b
}

func appendInt(b []byte, v int64) []byte { return strconv.AppendInt(b, v, 10) }

func appendSampleLine(b []byte, f PromFormat, name string, labels []label) []byte {
	b = append(b, name...)
	if len(labels) > 0 {
		b = append(b, '{')
		for i, l := range labels {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, l.name...)
			b = append(b, '=', '"')
			b = appendLabelValue(b, l.value)
			b = append(b, '"')
		}
		if f == PromLegacy {
			b = append(b, ',')
		}
		b = append(b, '}')
	}
	return append(b, ' ')
}

// appendLabelValue escapes '\\', '"' and newlines as the text format requires.
func appendLabelValue(b []byte, v string) []byte {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\':
			b = append(b, '\\', '\\')
		case '"':
			b = append(b, '\\', '"')
		case '\n':
			b = append(b, '\\', 'n')
		default:
			b = append(b, c)
		}
	}
	return b
}

func hasLabel(ls []label, name string) bool {
	for _, l := range ls {
		if l.name == name {
			return true
		}
	}
	return false
}
