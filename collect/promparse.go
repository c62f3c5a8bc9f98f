package collect

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// PromResult is what a Prometheus exposition says about Resilience4j.
type PromResult struct {
	// Breakers, sorted by name and instance.
	Breakers []BreakerSample
	// Limiters and Retries, sorted by name and instance.
	Limiters []LimiterSample
	// Retries holds the retry counters.
	Retries []RetrySample
	// ProcessStart is process_start_time_seconds (Unix seconds), NaN if absent.
	ProcessStart float64
	// DroppedLines counts repeated # HELP / # TYPE lines removed before parsing
	// (hand-assembled and legacy expositions repeat them; expfmt rejects that).
	DroppedLines int
}

// promKind says which breaker, time limiter or retry value a series carries.
type promKind uint8

const (
	pkNone promKind = iota
	pkProcessStart
	pkState
	pkFailureRate
	pkSlowCallRate
	pkBuffered
	pkSlowCalls
	pkNotPermitted
	pkCalls
	pkLimiter
	pkRetry
)

// callsSeconds is the call timer family; only its sample count is read.
const callsSeconds = "resilience4j_circuitbreaker_calls_seconds"

// promKindOf maps a series name (current and legacy generations) to its kind;
// names cbprobe does not read are pkNone.
func promKindOf(name string) promKind {
	switch name {
	case "process_start_time_seconds":
		return pkProcessStart
	case "resilience4j_circuitbreaker_state":
		return pkState
	case "resilience4j_circuitbreaker_failure_rate":
		return pkFailureRate
	case "resilience4j_circuitbreaker_slow_call_rate":
		return pkSlowCallRate
	case "resilience4j_circuitbreaker_buffered_calls":
		return pkBuffered
	case "resilience4j_circuitbreaker_slow_calls":
		return pkSlowCalls
	case "resilience4j_circuitbreaker_not_permitted_calls_total", "resilience4j_circuitbreaker_not_permitted_calls":
		return pkNotPermitted
	case "resilience4j_circuitbreaker_calls_total", callsSeconds + "_count", "resilience4j_circuitbreaker_calls_count":
		return pkCalls
	case "resilience4j_timelimiter_calls_total", "resilience4j_timelimiter_calls":
		return pkLimiter
	case "resilience4j_retry_calls_total", "resilience4j_retry_calls":
		return pkRetry
	}
	return pkNone
}

// promSeries is one sample with its labels, independent of where it came from
// (a scraped exposition or a Prometheus query result).
type promSeries struct {
	metric                       promKind
	lName, instance, kind, state string
	hasState                     bool
	value                        float64
}

// setLabel keeps the labels cbprobe reads and ignores the rest.
func (s *promSeries) setLabel(k, v string) {
	switch k {
	case "name":
		s.lName = v
	case "instance":
		s.instance = v
	case "kind":
		s.kind = v
	case "state":
		s.state, s.hasState = v, true
	}
}

// span is a byte range [from, to) of a body.
type span struct{ from, to int }

// filterExposition selects the lines cbprobe reads (resilience4j_* samples,
// the first # HELP and # TYPE line of each resilience4j_* name, and
// process_start_time_seconds) as byte ranges of in, adjacent lines merged, so
// nothing is copied. Repeated # HELP and # TYPE lines for a name are dropped
// and counted in dropped (hand-assembled and legacy expositions repeat them;
// expfmt rejects that); kept says whether any line was selected. Unrelated
// families are never parsed, so their syntax cannot fail a poll.
func filterExposition(in []byte) (segs []span, dropped int, kept bool) {
	var seenHelp, seenType map[string]struct{}
	segs = make([]span, 0, 8)
	for pos := 0; pos < len(in); {
		start := pos
		if i := bytes.IndexByte(in[pos:], '\n'); i >= 0 {
			pos += i + 1
		} else {
			pos = len(in)
		}
		line := in[start:pos]
		switch line[0] {
		case 'r', 'p':
			if !interesting(line) {
				continue
			}
		case '#':
			t := bytes.TrimLeft(line[1:], " \t")
			isType := len(t) >= 5 && string(t[:5]) == "TYPE "
			if !isType && (len(t) < 5 || string(t[:5]) != "HELP ") {
				continue
			}
			t = bytes.TrimLeft(t[5:], " \t")
			if !interesting(t) {
				continue
			}
			end := bytes.IndexAny(t, " \t\r\n")
			if end < 0 {
				end = len(t)
			}
			seen := &seenHelp
			if isType {
				seen = &seenType
			}
			if _, ok := (*seen)[string(t[:end])]; ok {
				dropped++
				continue
			}
			if *seen == nil {
				*seen = map[string]struct{}{}
			}
			(*seen)[string(t[:end])] = struct{}{}
		default:
			continue
		}
		kept = true
		if n := len(segs); n > 0 && segs[n-1].to == start {
			segs[n-1].to = pos
		} else {
			segs = append(segs, span{start, pos})
		}
	}
	// A body cut in the middle of a kept line stays an error in the parser
	// ("unexpected end of input stream"): no newline is added.
	return segs, dropped, kept
}

func interesting(t []byte) bool {
	const r4j, pst = "resilience4j_", "process_start_time_seconds"
	return len(t) >= len(r4j) && string(t[:len(r4j)]) == r4j ||
		len(t) >= len(pst) && string(t[:len(pst)]) == pst
}

// spanReader reads the selected ranges of a body one after the other.
type spanReader struct {
	body []byte
	segs []span
}

// Read implements io.Reader.
func (r *spanReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && len(r.segs) > 0 {
		s := &r.segs[0]
		c := copy(p[n:], r.body[s.from:s.to])
		n += c
		if s.from += c; s.from == s.to {
			r.segs = r.segs[1:]
		}
	}
	if n == 0 && len(r.segs) == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

// ErrNoSeries says a page or query held no resilience4j series at all (an empty
// page, or a service whose breakers are created on first use).
var ErrNoSeries = errors.New("no resilience4j circuit breaker, time limiter or retry series")

// ParsePrometheusText parses a /actuator/prometheus page (text format 0.0.4, both
// Micrometer generations, legacy names). Only resilience4j_* families and
// process_start_time_seconds are parsed; repeated # HELP / # TYPE lines are
// dropped first (PromResult.DroppedLines says how many). A page without any
// resilience4j circuit breaker, time limiter or retry series is an error.
func ParsePrometheusText(body []byte) (PromResult, error) {
	res := PromResult{ProcessStart: math.NaN()}
	if len(bytes.TrimSpace(body)) == 0 {
		return res, fmt.Errorf("empty body: %w", ErrNoSeries)
	}
	segs, dropped, kept := filterExposition(body)
	res.DroppedLines = dropped
	if !kept {
		t := bytes.TrimSpace(body)
		if t[0] == '<' {
			return res, fmt.Errorf("body is HTML, not Prometheus text (starts %q)", snippet(t, 40))
		}
		if t[0] == '{' || t[0] == '[' {
			return res, fmt.Errorf("body is JSON, not Prometheus text (starts %q)", snippet(t, 40))
		}
		return res, fmt.Errorf("%w in the exposition (no traffic yet, or resilience4j-micrometer missing)", ErrNoSeries)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(&spanReader{body: body, segs: segs})
	if err != nil {
		return res, fmt.Errorf("prometheus text: %w", err)
	}
	// One failure-rate series per breaker (both generations): a size hint.
	acc := newPromAcc(dropped, len(fams["resilience4j_circuitbreaker_failure_rate"].GetMetric()))
	for name, f := range fams {
		fk := promKindOf(name)
		if fk == pkNone && name != callsSeconds {
			continue
		}
		for _, m := range f.Metric {
			s := promSeries{metric: fk}
			switch {
			case m.Summary != nil: // only the call timer's count is read
				if name != callsSeconds {
					continue
				}
				s.metric, s.value = pkCalls, float64(m.Summary.GetSampleCount())
			case m.Histogram != nil:
				if name != callsSeconds {
					continue
				}
				s.metric, s.value = pkCalls, float64(m.Histogram.GetSampleCount())
			case m.Gauge != nil:
				s.value = m.Gauge.GetValue()
			case m.Counter != nil:
				s.value = m.Counter.GetValue()
			case m.Untyped != nil:
				s.value = m.Untyped.GetValue()
			default:
				continue
			}
			if s.metric == pkNone {
				continue
			}
			for _, l := range m.Label {
				s.setLabel(l.GetName(), l.GetValue())
			}
			acc.add(&s)
		}
	}
	res = acc.finish()
	if len(res.Breakers) == 0 && len(res.Limiters) == 0 && len(res.Retries) == 0 {
		return res, fmt.Errorf("%w in the exposition", ErrNoSeries)
	}
	return res, nil
}

// promAcc maps resilience4j series (current and legacy names) to samples.
// Counters are summed over labels other than name, instance and kind (Spring
// Cloud's "group", custom tags); gauges take the last value.
type promAcc struct {
	res      PromResult
	breakers map[BreakerKey]int // index in res.Breakers
	limiters map[BreakerKey]int // index in res.Limiters
	retries  map[BreakerKey]int // index in res.Retries
}

// newPromAcc returns an empty accumulator expecting about breakers breakers.
func newPromAcc(dropped, breakers int) *promAcc {
	return &promAcc{res: PromResult{ProcessStart: math.NaN(), DroppedLines: dropped, Breakers: make([]BreakerSample, 0, breakers)},
		breakers: make(map[BreakerKey]int, breakers), limiters: map[BreakerKey]int{}, retries: map[BreakerKey]int{}}
}

func (a *promAcc) breaker(k BreakerKey) *BreakerSample {
	i, ok := a.breakers[k]
	if !ok {
		i = len(a.res.Breakers)
		a.breakers[k] = i
		a.res.Breakers = append(a.res.Breakers, newBreakerSample(k.Name, k.Instance))
	}
	return &a.res.Breakers[i]
}

func (a *promAcc) limiter(k BreakerKey) *LimiterSample {
	i, ok := a.limiters[k]
	if !ok {
		i = len(a.res.Limiters)
		a.limiters[k] = i
		a.res.Limiters = append(a.res.Limiters, LimiterSample{Name: k.Name, Instance: k.Instance})
	}
	return &a.res.Limiters[i]
}

func (a *promAcc) retry(k BreakerKey) *RetrySample {
	i, ok := a.retries[k]
	if !ok {
		i = len(a.res.Retries)
		a.retries[k] = i
		a.res.Retries = append(a.res.Retries, RetrySample{Name: k.Name, Instance: k.Instance})
	}
	return &a.res.Retries[i]
}

// addTo adds v to a counter that is NaN until first reported.
func addTo(p *float64, v float64) {
	if math.IsNaN(*p) {
		*p = v
	} else {
		*p += v
	}
}

// add takes one series into the samples.
func (a *promAcc) add(s *promSeries) {
	if s.metric == pkProcessStart {
		a.res.ProcessStart = s.value
		return
	}
	k := BreakerKey{Name: s.lName, Instance: s.instance}
	if k.Name == "" {
		return
	}
	switch s.metric {
	case pkState:
		if !s.hasState {
			return // legacy unlabeled variant carries nothing
		}
		b := a.breaker(k)
		if s.value == 1 {
			b.State = stateFromTag(s.state)
		}
	case pkFailureRate:
		a.breaker(k).FailureRate = s.value
	case pkSlowCallRate:
		a.breaker(k).SlowCallRate = s.value
	case pkBuffered:
		b := a.breaker(k)
		addTo(&b.Buffered, s.value)
		if s.kind == "failed" {
			addTo(&b.Failed, s.value)
		}
	case pkSlowCalls:
		b := a.breaker(k)
		addTo(&b.Slow, s.value)
		if s.kind == "failed" {
			addTo(&b.SlowFailed, s.value)
		}
	case pkNotPermitted:
		addTo(&a.breaker(k).NotPermittedTotal, s.value)
	case pkCalls:
		b := a.breaker(k)
		switch s.kind {
		case "not_permitted": // before resilience4j 1.6.0
			addTo(&b.NotPermittedTotal, s.value)
		case "successful":
			addTo(&b.CallsSuccessful, s.value)
		case "failed":
			addTo(&b.CallsFailed, s.value)
		case "ignored":
			addTo(&b.CallsIgnored, s.value)
		}
	case pkLimiter:
		l := a.limiter(k)
		switch s.kind {
		case "successful":
			l.Successful += s.value
		case "failed":
			l.Failed += s.value
		case "timeout":
			l.Timeout += s.value
		}
	case pkRetry:
		r := a.retry(k)
		switch s.kind {
		case "successful_without_retry":
			r.SuccessfulWithoutRetry += s.value
		case "successful_with_retry":
			r.SuccessfulWithRetry += s.value
		case "failed_without_retry":
			r.FailedWithoutRetry += s.value
		case "failed_with_retry":
			r.FailedWithRetry += s.value
		}
	}
}

// finish stamps the process start on every breaker and sorts the samples by
// name and instance.
func (a *promAcc) finish() PromResult {
	res := a.res
	for i := range res.Breakers {
		res.Breakers[i].ProcessStart = res.ProcessStart
	}
	res.Breakers = sortByKey(res.Breakers, func(s *BreakerSample) (string, string) { return s.Name, s.Instance })
	res.Limiters = sortByKey(res.Limiters, func(s *LimiterSample) (string, string) { return s.Name, s.Instance })
	res.Retries = sortByKey(res.Retries, func(s *RetrySample) (string, string) { return s.Name, s.Instance })
	return res
}

// sortByKey returns s sorted by name, then instance. It sorts indices and
// copies each (large) sample once instead of swapping samples.
func sortByKey[T any](s []T, key func(*T) (name, instance string)) []T {
	less := func(i, j int32) int {
		an, ai := key(&s[i])
		bn, bi := key(&s[j])
		if c := strings.Compare(an, bn); c != 0 {
			return c
		}
		return strings.Compare(ai, bi)
	}
	sorted := true
	for i := 1; i < len(s) && sorted; i++ {
		sorted = less(int32(i-1), int32(i)) <= 0
	}
	if sorted {
		return s
	}
	order := make([]int32, len(s))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, less)
	out := make([]T, len(s))
	for k, i := range order {
		out[k] = s[i]
	}
	return out
}

func keyLess(a, b BreakerKey) bool {
	if a.Name != b.Name {
		return a.Name < b.Name
	}
	return a.Instance < b.Instance
}

// stateFromTag maps a micrometer state tag ("half_open") to the Java name.
func stateFromTag(t string) string {
	switch t {
	case "closed":
		return "CLOSED"
	case "open":
		return "OPEN"
	case "half_open":
		return "HALF_OPEN"
	case "forced_open":
		return "FORCED_OPEN"
	case "disabled":
		return "DISABLED"
	case "metrics_only":
		return "METRICS_ONLY"
	}
	return ""
}
