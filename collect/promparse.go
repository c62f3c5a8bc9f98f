package collect

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"sort"

	dto "github.com/prometheus/client_model/go"
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

// promSeries is one sample with its labels, independent of where it came from
// (a scraped exposition or a Prometheus query result).
type promSeries struct {
	name                         string
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

// filterExposition keeps only the lines cbprobe reads (resilience4j_* samples and
// their # HELP / # TYPE lines, and process_start_time_seconds), and drops every
// # HELP or # TYPE line for a name already declared. It returns the kept text,
// the number of repeated declarations dropped and whether any line was kept.
// Unrelated families are never parsed, so their syntax cannot fail a poll.
func filterExposition(in []byte) (out []byte, dropped int, kept bool) {
	out = make([]byte, 0, len(in))
	var seenHelp, seenType map[string]bool
	for len(in) > 0 {
		var line []byte
		if i := bytes.IndexByte(in, '\n'); i >= 0 {
			line, in = in[:i+1], in[i+1:]
		} else {
			line, in = in, nil
		}
		t := line
		if len(t) > 0 && t[0] == '#' {
			t = bytes.TrimLeft(t[1:], " \t")
			var kind string
			switch {
			case bytes.HasPrefix(t, []byte("HELP ")):
				kind = "HELP"
			case bytes.HasPrefix(t, []byte("TYPE ")):
				kind = "TYPE"
			default:
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
			name := string(t[:end])
			seen := &seenHelp
			if kind == "TYPE" {
				seen = &seenType
			}
			if *seen == nil {
				*seen = map[string]bool{}
			}
			if (*seen)[name] {
				dropped++
				continue
			}
			(*seen)[name] = true
		} else if !interesting(t) {
			continue
		}
		kept = true
		out = append(out, line...)
	}
	// A body cut in the middle of a kept line stays an error in the parser
	// ("unexpected end of input stream"): no newline is added.
	return out, dropped, kept
}

func interesting(t []byte) bool {
	return bytes.HasPrefix(t, []byte("resilience4j_")) || bytes.HasPrefix(t, []byte("process_start_time_seconds"))
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
	text, dropped, kept := filterExposition(body)
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
	fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return res, fmt.Errorf("prometheus text: %w", err)
	}
	series := make([]promSeries, 0, 64)
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			series = appendMetric(series, name, m)
		}
	}
	res = fromSeries(series, res.DroppedLines)
	if len(res.Breakers) == 0 && len(res.Limiters) == 0 && len(res.Retries) == 0 {
		return res, fmt.Errorf("%w in the exposition", ErrNoSeries)
	}
	return res, nil
}

// appendMetric flattens one parsed metric into series named as in the text.
func appendMetric(out []promSeries, name string, m *dto.Metric) []promSeries {
	var s promSeries
	for _, l := range m.GetLabel() {
		s.setLabel(l.GetName(), l.GetValue())
	}
	with := func(n string, v float64) promSeries { c := s; c.name, c.value = n, v; return c }
	switch {
	case m.Summary != nil:
		if name == "resilience4j_circuitbreaker_calls_seconds" { // only the count is read
			out = append(out, with(name+"_count", float64(m.Summary.GetSampleCount())))
		}
	case m.Histogram != nil:
		if name == "resilience4j_circuitbreaker_calls_seconds" {
			out = append(out, with(name+"_count", float64(m.Histogram.GetSampleCount())))
		}
	case m.Gauge != nil:
		out = append(out, with(name, m.Gauge.GetValue()))
	case m.Counter != nil:
		out = append(out, with(name, m.Counter.GetValue()))
	case m.Untyped != nil:
		out = append(out, with(name, m.Untyped.GetValue()))
	}
	return out
}

// fromSeries maps resilience4j series (current and legacy names) to samples.
// Counters are summed over labels other than name, instance and kind (Spring
// Cloud's "group", custom tags); gauges take the last value.
func fromSeries(series []promSeries, dropped int) PromResult {
	res := PromResult{ProcessStart: math.NaN(), DroppedLines: dropped}
	breakers := map[BreakerKey]*BreakerSample{}
	limiters := map[BreakerKey]*LimiterSample{}
	retries := map[BreakerKey]*RetrySample{}
	stateSeen := map[BreakerKey]bool{}
	br := func(k BreakerKey) *BreakerSample {
		b := breakers[k]
		if b == nil {
			s := newBreakerSample(k.Name, k.Instance)
			b = &s
			breakers[k] = b
		}
		return b
	}
	add := func(p *float64, v float64) {
		if math.IsNaN(*p) {
			*p = v
		} else {
			*p += v
		}
	}
	for _, s := range series {
		if s.name == "process_start_time_seconds" {
			res.ProcessStart = s.value
			continue
		}
		k := BreakerKey{Name: s.lName, Instance: s.instance}
		if k.Name == "" {
			continue
		}
		kind := s.kind
		switch s.name {
		case "resilience4j_circuitbreaker_state":
			st, ok := s.state, s.hasState
			if !ok {
				continue // legacy unlabeled variant carries nothing
			}
			b := br(k)
			if s.value == 1 {
				b.State = stateFromTag(st)
			}
			stateSeen[k] = true
		case "resilience4j_circuitbreaker_failure_rate":
			br(k).FailureRate = s.value
		case "resilience4j_circuitbreaker_slow_call_rate":
			br(k).SlowCallRate = s.value
		case "resilience4j_circuitbreaker_buffered_calls":
			b := br(k)
			add(&b.Buffered, s.value)
			if kind == "failed" {
				add(&b.Failed, s.value)
			}
		case "resilience4j_circuitbreaker_slow_calls":
			b := br(k)
			add(&b.Slow, s.value)
			if kind == "failed" {
				add(&b.SlowFailed, s.value)
			}
		case "resilience4j_circuitbreaker_not_permitted_calls_total", "resilience4j_circuitbreaker_not_permitted_calls":
			add(&br(k).NotPermittedTotal, s.value)
		case "resilience4j_circuitbreaker_calls_total", "resilience4j_circuitbreaker_calls_seconds_count", "resilience4j_circuitbreaker_calls_count":
			b := br(k)
			switch kind {
			case "not_permitted": // before resilience4j 1.6.0
				add(&b.NotPermittedTotal, s.value)
			case "successful":
				add(&b.CallsSuccessful, s.value)
			case "failed":
				add(&b.CallsFailed, s.value)
			case "ignored":
				add(&b.CallsIgnored, s.value)
			}
		case "resilience4j_timelimiter_calls_total", "resilience4j_timelimiter_calls":
			l := limiters[k]
			if l == nil {
				l = &LimiterSample{Name: k.Name, Instance: k.Instance}
				limiters[k] = l
			}
			switch kind {
			case "successful":
				l.Successful += s.value
			case "failed":
				l.Failed += s.value
			case "timeout":
				l.Timeout += s.value
			}
		case "resilience4j_retry_calls_total", "resilience4j_retry_calls":
			r := retries[k]
			if r == nil {
				r = &RetrySample{Name: k.Name, Instance: k.Instance}
				retries[k] = r
			}
			switch kind {
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
	for _, b := range breakers {
		b.ProcessStart = res.ProcessStart
		res.Breakers = append(res.Breakers, *b)
	}
	for _, l := range limiters {
		res.Limiters = append(res.Limiters, *l)
	}
	for _, r := range retries {
		res.Retries = append(res.Retries, *r)
	}
	sort.Slice(res.Breakers, func(i, j int) bool { return keyLess(res.Breakers[i].Key(), res.Breakers[j].Key()) })
	sort.Slice(res.Limiters, func(i, j int) bool {
		return keyLess(BreakerKey{res.Limiters[i].Name, res.Limiters[i].Instance}, BreakerKey{res.Limiters[j].Name, res.Limiters[j].Instance})
	})
	sort.Slice(res.Retries, func(i, j int) bool {
		return keyLess(BreakerKey{res.Retries[i].Name, res.Retries[i].Instance}, BreakerKey{res.Retries[j].Name, res.Retries[j].Instance})
	})
	return res
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
