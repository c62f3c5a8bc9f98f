package collect

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
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
	// OpenMetrics is true for an OpenMetrics page (it ends with "# EOF"):
	// exemplars, sample timestamps and _created samples were removed before parsing.
	OpenMetrics bool
	// Legacy names the old resilience4j metric generations the page used and
	// cbprobe read (LegacyExports, LegacyOrderGauge), in order of first use.
	Legacy []string
	// NaN lists, per breaker, the gauges that read NaN (resilience4j issue
	// #1330: Micrometer reports NaN once the object a gauge watches was
	// garbage-collected). Sorted; the affected values are unknown.
	NaN []NaNGauges
	// Unread lists the resilience4j_* families on the page that cbprobe does
	// not read (bulkheads, rate limiters, _max gauges, ...), sorted.
	Unread []string
}

// NaNGauges says which gauges of one breaker read NaN.
type NaNGauges struct {
	// Breaker is the breaker.
	Breaker BreakerKey
	// Families are the metric names whose sample was NaN.
	Families []string
}

// The old resilience4j metric generations cbprobe reads (PromResult.Legacy).
const (
	// LegacyExports is the resilience4j-prometheus module's CircuitBreakerExports
	// (resilience4j 0.x up to 0.14.1): resilience4j_circuitbreaker_states{state}
	// and resilience4j_circuitbreaker_calls{call_result} gauges.
	LegacyExports = "resilience4j 0.x resilience4j-prometheus CircuitBreakerExports (resilience4j_circuitbreaker_states, resilience4j_circuitbreaker_calls{call_result})"
	// LegacyOrderGauge is resilience4j 0.14's micrometer binder and the
	// 0.14-0.17 prometheus collector: resilience4j_circuitbreaker_state{name}
	// holding the state's order and resilience4j_circuitbreaker_calls{kind} gauges.
	LegacyOrderGauge = "resilience4j 0.14-0.17 state-order gauge (resilience4j_circuitbreaker_state without a state label, resilience4j_circuitbreaker_calls{kind} gauges)"
)

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
	pkStates      // 0.x resilience4j_circuitbreaker_states{state}: 1 for the current state
	pkCallsGauge  // 0.x resilience4j_circuitbreaker_calls{call_result|kind}: window counts
	pkMaxBuffered // 0.x resilience4j_circuitbreaker_max_buffered_calls: the ring size
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
	case "resilience4j_circuitbreaker_states":
		return pkStates
	case "resilience4j_circuitbreaker_calls":
		return pkCallsGauge
	case "resilience4j_circuitbreaker_max_buffered_calls":
		return pkMaxBuffered
	}
	return pkNone
}

// promSeries is one sample with its labels, independent of where it came from
// (a scraped exposition or a Prometheus query result).
type promSeries struct {
	metric                       promKind
	family                       string // the metric name, for messages
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
	case "kind", "call_result": // call_result: resilience4j-prometheus 0.x
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

// ParsePrometheusText parses a /actuator/prometheus page (text format 0.0.4
// and OpenMetrics 1.0, both Micrometer generations, the resilience4j 0.x
// names). Only resilience4j_* families and process_start_time_seconds are
// parsed; repeated # HELP / # TYPE lines are dropped first
// (PromResult.DroppedLines says how many). A page without any resilience4j
// circuit breaker, time limiter or retry series is an error wrapping
// ErrNoSeries; when the page has resilience4j_ lines cbprobe does not read,
// the error names their families and the format.
func ParsePrometheusText(body []byte) (PromResult, error) {
	res := PromResult{ProcessStart: math.NaN()}
	if len(bytes.TrimSpace(body)) == 0 {
		return res, fmt.Errorf("empty body: %w", ErrNoSeries)
	}
	om := isOpenMetrics(body)
	if om {
		body = openMetricsToText(body)
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
	acc.res.OpenMetrics = om
	for name, f := range fams {
		fk := promKindOf(name)
		if fk == pkNone && name != callsSeconds {
			if strings.HasPrefix(name, "resilience4j_") && len(f.Metric) > 0 {
				acc.res.Unread = append(acc.res.Unread, name)
			}
			continue
		}
		for _, m := range f.Metric {
			s := promSeries{metric: fk, family: name}
			switch {
			case m.Summary != nil: // only the call timer's count is read
				if name != callsSeconds {
					continue
				}
				// A summary with quantiles but no _count line: the count is
				// unknown, not 0.
				s.metric, s.value = pkCalls, math.NaN()
				if m.Summary.SampleCount != nil {
					s.value = float64(m.Summary.GetSampleCount())
				}
			case m.Histogram != nil:
				if name != callsSeconds {
					continue
				}
				s.metric, s.value = pkCalls, math.NaN()
				if m.Histogram.SampleCount != nil || m.Histogram.SampleCountFloat != nil {
					s.value = float64(m.Histogram.GetSampleCount())
					if m.Histogram.SampleCountFloat != nil {
						s.value = m.Histogram.GetSampleCountFloat()
					}
				}
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
	sort.Strings(res.Unread)
	if len(res.Breakers) == 0 && len(res.Limiters) == 0 && len(res.Retries) == 0 {
		if len(res.Unread) > 0 {
			return res, fmt.Errorf("%w in the exposition, though it has resilience4j series cbprobe does not read: %s (%s)",
				ErrNoSeries, strings.Join(res.Unread, ", "), unreadFormat(res.Unread))
		}
		return res, fmt.Errorf("%w in the exposition", ErrNoSeries)
	}
	return res, nil
}

// unreadFormat names the format of resilience4j families cbprobe does not read.
func unreadFormat(fams []string) string {
	breakerish := false
	for _, f := range fams {
		breakerish = breakerish || strings.HasPrefix(f, "resilience4j_circuitbreaker_") ||
			strings.HasPrefix(f, "resilience4j_timelimiter_") || strings.HasPrefix(f, "resilience4j_retry_")
	}
	if !breakerish {
		return "cbprobe reads circuit breakers, time limiters and retries; these are other resilience4j modules"
	}
	return "not a circuit breaker format cbprobe knows; the formats it reads are those of resilience4j 0.9 and later " +
		"(resilience4j-prometheus or resilience4j-micrometer), see docs/metrics-sources.md"
}

// isOpenMetrics reports whether body is an OpenMetrics exposition: its last
// line is "# EOF" (mandatory in OpenMetrics, absent from text 0.0.4).
func isOpenMetrics(body []byte) bool {
	t := bytes.TrimRight(body, " \t\r\n")
	return bytes.HasSuffix(t, []byte("# EOF")) && (len(t) == 5 || t[len(t)-6] == '\n')
}

// openMetricsToText rewrites an OpenMetrics page into text format 0.0.4 for
// the text parser: "# EOF" and "# UNIT" lines are dropped, so are _created
// samples (creation times, not values) and TYPE lines the text format does
// not have (info, stateset, gaugehistogram; unknown becomes untyped); sample
// timestamps (seconds in OpenMetrics, milliseconds in the text format) and
// exemplars are cut after the value. Counters stay declared without _total:
// their _total samples are then read as untyped, which is all cbprobe needs.
func openMetricsToText(body []byte) []byte {
	out := make([]byte, 0, len(body))
	for pos := 0; pos < len(body); {
		start := pos
		if i := bytes.IndexByte(body[pos:], '\n'); i >= 0 {
			pos += i + 1
		} else {
			pos = len(body)
		}
		line := bytes.TrimRight(body[start:pos], "\r\n")
		if len(line) == 0 {
			continue
		}
		if line[0] == '#' {
			f := bytes.Fields(line)
			if len(f) >= 2 && (string(f[1]) == "EOF" || string(f[1]) == "UNIT") {
				continue
			}
			if len(f) == 4 && string(f[1]) == "TYPE" {
				switch string(f[3]) {
				case "info", "stateset", "gaugehistogram":
					continue
				case "unknown":
					line = append(append(append([]byte(nil), "# TYPE "...), f[2]...), " untyped"...)
				}
			}
			out = append(append(out, line...), '\n')
			continue
		}
		name := line
		if i := bytes.IndexAny(line, "{ \t"); i >= 0 {
			name = line[:i]
		}
		if bytes.HasSuffix(name, []byte("_created")) {
			continue
		}
		out = append(append(out, sampleCore(line)...), '\n')
	}
	return out
}

// sampleCore returns a sample line up to the end of its value: without a
// timestamp or an exemplar. Label values may hold '#', '}', spaces and
// escaped quotes (Feign names such as "Client#pay(String,Order)").
func sampleCore(line []byte) []byte {
	i := 0
	for i < len(line) && line[i] != '{' && line[i] != ' ' && line[i] != '\t' {
		i++
	}
	if i < len(line) && line[i] == '{' {
		inQuote := false
		for i++; i < len(line); i++ {
			c := line[i]
			if inQuote {
				switch c {
				case '\\':
					i++
				case '"':
					inQuote = false
				}
				continue
			}
			if c == '"' {
				inQuote = true
			} else if c == '}' {
				i++
				break
			}
		}
	}
	for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	for i < len(line) && line[i] != ' ' && line[i] != '\t' {
		i++
	}
	return line[:i]
}

// promAcc maps resilience4j series (current and legacy names) to samples.
// Counters are summed over labels other than name, instance and kind (Spring
// Cloud's "group", custom tags); gauges take the last value.
type promAcc struct {
	res      PromResult
	breakers map[BreakerKey]int         // index in res.Breakers
	limiters map[BreakerKey]int         // index in res.Limiters
	retries  map[BreakerKey]int         // index in res.Retries
	old      map[BreakerKey]*oldBreaker // resilience4j 0.x values, nil until seen
	nan      map[BreakerKey][]string    // gauges that read NaN
}

// oldBreaker collects what the resilience4j 0.x generations export instead of
// the current series; finish turns it into the sample's values.
type oldBreaker struct {
	tagged     bool    // a state{state=...} or states{state=...} series was seen
	order      float64 // the state-order gauge (NaN: none)
	successful float64 // calls{successful}: successful calls in the ring
	maxBuf     float64 // calls{buffered_max} or max_buffered_calls: the ring size
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

// legacy records that the page used an old generation of names.
func (a *promAcc) legacy(gen string) {
	if !slices.Contains(a.res.Legacy, gen) {
		a.res.Legacy = append(a.res.Legacy, gen)
	}
}

func (a *promAcc) oldOf(k BreakerKey) *oldBreaker {
	if a.old == nil {
		a.old = map[BreakerKey]*oldBreaker{}
	}
	o := a.old[k]
	if o == nil {
		n := math.NaN()
		o = &oldBreaker{order: n, successful: n, maxBuf: n}
		a.old[k] = o
	}
	return o
}

// stateOrder is CircuitBreaker.State's order, the value of the 0.14-0.17 state gauge.
var stateOrder = [...]string{"CLOSED", "OPEN", "HALF_OPEN", "DISABLED", "FORCED_OPEN", "METRICS_ONLY"}

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
	if math.IsNaN(s.value) && s.metric != pkCalls && s.metric != pkLimiter && s.metric != pkRetry && s.metric != pkNotPermitted {
		fam := s.family
		if fam == "" {
			fam = "resilience4j_circuitbreaker_*"
		}
		if !slices.Contains(a.nan[k], fam) {
			if a.nan == nil {
				a.nan = map[BreakerKey][]string{}
			}
			a.nan[k] = append(a.nan[k], fam)
		}
	}
	switch s.metric {
	case pkState, pkStates:
		b := a.breaker(k)
		if s.metric == pkStates {
			a.legacy(LegacyExports)
		}
		if !s.hasState { // 0.14-0.17: one gauge holding the state's order
			a.legacy(LegacyOrderGauge)
			a.oldOf(k).order = s.value
			return
		}
		if a.old != nil || s.metric == pkStates {
			a.oldOf(k).tagged = true
		}
		if s.value == 1 {
			b.State = stateFromTag(s.state)
		}
	case pkCallsGauge: // 0.x: window counts by call_result (exports) or kind (0.14)
		b := a.breaker(k)
		o := a.oldOf(k)
		switch s.kind {
		case "successful":
			o.successful = s.value
		case "failed":
			b.Failed = s.value
		case "not_permitted":
			b.NotPermitted = s.value
		case "buffered":
			b.Buffered = s.value
		case "buffered_max":
			o.maxBuf = s.value
		}
	case pkMaxBuffered:
		a.breaker(k)
		a.oldOf(k).maxBuf = s.value
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

// finish stamps the process start on every breaker, completes the values of
// the resilience4j 0.x generations, and sorts the samples by name and instance.
func (a *promAcc) finish() PromResult {
	res := a.res
	for i := range res.Breakers {
		res.Breakers[i].ProcessStart = res.ProcessStart
		if o := a.old[res.Breakers[i].Key()]; o != nil {
			o.complete(&res.Breakers[i])
		}
	}
	for k, fams := range a.nan {
		sort.Strings(fams)
		res.NaN = append(res.NaN, NaNGauges{Breaker: k, Families: fams})
	}
	sort.Slice(res.NaN, func(i, j int) bool { return keyLess(res.NaN[i].Breaker, res.NaN[j].Breaker) })
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

// complete fills a breaker's state and window from the 0.x values: the state
// from the order gauge (when no state-tagged series said it), the window size
// from successful + failed, and the failure rate by the 0.x rule (-1 until
// the ring buffer is full, then failed / ring size, in float32).
func (o *oldBreaker) complete(b *BreakerSample) {
	if !o.tagged && !math.IsNaN(o.order) && b.State == "" {
		if i := int(o.order); float64(i) == o.order && i >= 0 && i < len(stateOrder) {
			b.State = stateOrder[i]
		}
	}
	if math.IsNaN(b.Buffered) && !math.IsNaN(o.successful) && !math.IsNaN(b.Failed) {
		b.Buffered = o.successful + b.Failed
	}
	if math.IsNaN(b.FailureRate) && !math.IsNaN(o.maxBuf) && o.maxBuf > 0 && !math.IsNaN(b.Buffered) && !math.IsNaN(b.Failed) {
		if b.Buffered < o.maxBuf {
			b.FailureRate = -1
		} else {
			b.FailureRate = float64(float32(b.Failed) * 100 / float32(o.maxBuf))
		}
	}
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
