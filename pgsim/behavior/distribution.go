package behavior

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// Distribution is a latency distribution. Sample draws one latency from r;
// it never returns a negative duration and consumes r deterministically, so
// the same seeded r gives the same sequence of samples. String returns the
// canonical text form that ParseDistribution reads back.
type Distribution interface {
	Sample(r *rand.Rand) time.Duration
	String() string
}

// maxSample bounds every sample (about 292 years would overflow; 24 h is plenty
// for a simulated gateway and keeps arithmetic on sums safe).
const maxSample = 24 * time.Hour

// z99 is the 0.99 quantile of the standard normal distribution.
const z99 = 2.3263478740408408

// Fixed always returns D.
type Fixed struct {
	D time.Duration // the latency, >= 0
}

// Sample returns f.D without drawing from r.
func (f Fixed) Sample(*rand.Rand) time.Duration { return f.D }

// String returns the duration, for example "200ms".
func (f Fixed) String() string { return f.D.String() }

// Uniform draws uniformly from [Min, Max] at nanosecond resolution.
type Uniform struct {
	Min, Max time.Duration // bounds, 0 <= Min <= Max
}

// Sample draws one value (one Int64N call on r, none when Min == Max).
func (u Uniform) Sample(r *rand.Rand) time.Duration {
	if u.Max <= u.Min {
		return u.Min
	}
	return u.Min + time.Duration(r.Int64N(int64(u.Max-u.Min)+1))
}

// String returns "MIN-MAX", for example "100ms-500ms".
func (u Uniform) String() string { return u.Min.String() + "-" + u.Max.String() }

// Normal draws from a normal distribution with mean Mean and standard deviation
// SD; samples below 0 become 0 (truncated at 0) and samples above 24 h become 24 h.
type Normal struct {
	Mean, SD time.Duration // SD >= 0
}

// Sample draws one value (one NormFloat64 call on r).
func (n Normal) Sample(r *rand.Rand) time.Duration {
	return clampSample(float64(n.Mean) + float64(n.SD)*r.NormFloat64())
}

// String returns "normal:mean=M,sd=S".
func (n Normal) String() string { return "normal:mean=" + n.Mean.String() + ",sd=" + n.SD.String() }

// LogNormal draws from a log-normal distribution given by its median and its
// 99th percentile: ln X ~ N(ln Median, sigma) with sigma = ln(P99/Median)/z0.99.
type LogNormal struct {
	Median, P99 time.Duration // 0 < Median <= P99
}

// Sigma returns the standard deviation of ln X.
func (l LogNormal) Sigma() float64 {
	if l.Median <= 0 || l.P99 <= l.Median {
		return 0
	}
	return math.Log(float64(l.P99)/float64(l.Median)) / z99
}

// Sample draws one value (one NormFloat64 call on r).
func (l LogNormal) Sample(r *rand.Rand) time.Duration {
	return clampSample(float64(l.Median) * math.Exp(l.Sigma()*r.NormFloat64()))
}

// String returns "lognormal:median=M,p99=P".
func (l LogNormal) String() string {
	return "lognormal:median=" + l.Median.String() + ",p99=" + l.P99.String()
}

// Empirical picks one of Values uniformly at random.
type Empirical struct {
	Values []time.Duration // at least one value, each >= 0
}

// Sample draws one value (one IntN call on r).
func (e Empirical) Sample(r *rand.Rand) time.Duration {
	if len(e.Values) == 0 {
		return 0
	}
	return e.Values[r.IntN(len(e.Values))]
}

// String returns "list:V1,V2,...".
func (e Empirical) String() string {
	parts := make([]string, len(e.Values))
	for i, v := range e.Values {
		parts[i] = v.String()
	}
	return "list:" + strings.Join(parts, ",")
}

func clampSample(v float64) time.Duration {
	switch {
	case math.IsNaN(v) || v <= 0:
		return 0
	case v >= float64(maxSample):
		return maxSample
	}
	return time.Duration(v)
}

// ParseDistribution reads a distribution written as one of:
//
//	"200ms"                            fixed ("fixed:200ms" too)
//	"100ms-500ms"                      uniform, bounds inclusive ("uniform:100ms-500ms" too)
//	"normal:mean=200ms,sd=50ms"        normal, truncated at 0
//	"lognormal:median=200ms,p99=1s"    log-normal from its median and 99th percentile
//	"list:100ms,150ms,900ms"           empirical: one of the values, uniformly
//
// Durations use Go syntax (ns, us, ms, s, m, h); "0" is allowed.
func ParseDistribution(s string) (Distribution, error) {
	d, err := parseDistribution(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("distribution %q: %w", s, err)
	}
	if err := checkDistribution(d); err != nil {
		return nil, fmt.Errorf("distribution %q: %w", s, err)
	}
	return d, nil
}

func parseDistribution(s string) (Distribution, error) {
	if s == "" {
		return nil, fmt.Errorf("empty; want e.g. 200ms, 100ms-500ms, normal:mean=200ms,sd=50ms, lognormal:median=200ms,p99=1s or list:100ms,900ms")
	}
	kind, rest, hasKind := strings.Cut(s, ":")
	if !hasKind {
		if strings.HasPrefix(s, "-") {
			return nil, fmt.Errorf("a latency cannot be negative")
		}
		if strings.Contains(s, "-") {
			return parseUniform(s)
		}
		d, err := parseNonNegative(s)
		if err != nil {
			return nil, err
		}
		return Fixed{D: d}, nil
	}
	switch strings.ToLower(strings.TrimSpace(kind)) {
	case "fixed":
		d, err := parseNonNegative(rest)
		if err != nil {
			return nil, err
		}
		return Fixed{D: d}, nil
	case "uniform":
		if strings.Contains(rest, "=") {
			kv, err := parseParams(rest, "min", "max")
			if err != nil {
				return nil, err
			}
			return Uniform{Min: kv["min"], Max: kv["max"]}, nil
		}
		return parseUniform(rest)
	case "normal":
		kv, err := parseParams(rest, "mean", "sd")
		if err != nil {
			return nil, err
		}
		return Normal{Mean: kv["mean"], SD: kv["sd"]}, nil
	case "lognormal":
		kv, err := parseParams(rest, "median", "p99")
		if err != nil {
			return nil, err
		}
		return LogNormal{Median: kv["median"], P99: kv["p99"]}, nil
	case "list":
		var vals []time.Duration
		for _, part := range strings.Split(rest, ",") {
			d, err := parseNonNegative(part)
			if err != nil {
				return nil, err
			}
			vals = append(vals, d)
		}
		return Empirical{Values: vals}, nil
	}
	return nil, fmt.Errorf("unknown kind %q; want fixed, uniform, normal, lognormal or list", kind)
}

func parseUniform(s string) (Distribution, error) {
	lo, hi, ok := strings.Cut(s, "-")
	if !ok {
		return nil, fmt.Errorf("want MIN-MAX, e.g. 100ms-500ms")
	}
	a, err := parseNonNegative(lo)
	if err != nil {
		return nil, err
	}
	b, err := parseNonNegative(hi)
	if err != nil {
		return nil, err
	}
	return Uniform{Min: a, Max: b}, nil
}

// parseParams reads "k1=v1,k2=v2" and requires exactly the given keys.
func parseParams(s string, keys ...string) (map[string]time.Duration, error) {
	out := make(map[string]time.Duration, len(keys))
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(part, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		if !ok {
			return nil, fmt.Errorf("parameter %q: want key=duration", strings.TrimSpace(part))
		}
		known := false
		for _, want := range keys {
			known = known || k == want
		}
		if !known {
			return nil, fmt.Errorf("unknown parameter %q; want %s", k, strings.Join(keys, ", "))
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("parameter %q given twice", k)
		}
		d, err := parseNonNegative(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = d
	}
	for _, want := range keys {
		if _, ok := out[want]; !ok {
			return nil, fmt.Errorf("missing parameter %q", want)
		}
	}
	return out, nil
}

func parseNonNegative(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty duration")
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("bad duration %q (want e.g. 150ms or 1s)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	if d > maxSample {
		return 0, fmt.Errorf("duration %q is above the 24h limit", s)
	}
	return d, nil
}

// checkDistribution validates a distribution built either by ParseDistribution or
// as a Go literal.
func checkDistribution(d Distribution) error {
	bad := func(v time.Duration) bool { return v < 0 || v > maxSample }
	switch d := d.(type) {
	case nil:
		return fmt.Errorf("missing")
	case Fixed:
		if bad(d.D) {
			return fmt.Errorf("%v is outside [0, 24h]", d.D)
		}
	case Uniform:
		if bad(d.Min) || bad(d.Max) {
			return fmt.Errorf("bounds %v-%v are outside [0, 24h]", d.Min, d.Max)
		}
		if d.Max < d.Min {
			return fmt.Errorf("max %v is below min %v", d.Max, d.Min)
		}
	case Normal:
		if bad(d.Mean) || bad(d.SD) {
			return fmt.Errorf("mean %v and sd %v must be in [0, 24h]", d.Mean, d.SD)
		}
	case LogNormal:
		if d.Median <= 0 || bad(d.Median) || bad(d.P99) {
			return fmt.Errorf("median %v must be in (0, 24h] and p99 %v in [0, 24h]", d.Median, d.P99)
		}
		if d.P99 < d.Median {
			return fmt.Errorf("p99 %v is below the median %v", d.P99, d.Median)
		}
	case Empirical:
		if len(d.Values) == 0 {
			return fmt.Errorf("empty list")
		}
		for _, v := range d.Values {
			if bad(v) {
				return fmt.Errorf("value %v is outside [0, 24h]", v)
			}
		}
	}
	return nil
}
