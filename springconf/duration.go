package springconf

import (
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"
)

// ParseDuration parses a duration as Spring Boot binds java.time.Duration: the simple
// form "<integer><unit>" with unit ns, us, ms, s, m, h or d (case-insensitive), a bare
// integer meaning milliseconds, or ISO-8601 such as "PT0.5S", "PT1M30S" or "P1DT2H".
// Fractions are only allowed in the ISO seconds part ("0.5s" is rejected, as Spring
// does). Durations beyond time.Duration's range (about 292 years) are an error.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("empty duration")
	}
	if t[0] == 'P' || t[0] == 'p' || ((t[0] == '-' || t[0] == '+') && len(t) > 1 && (t[1] == 'P' || t[1] == 'p')) {
		d, err := parseISODuration(t)
		if err != nil {
			return 0, fmt.Errorf("%q is not an ISO-8601 duration: %w", s, err)
		}
		return d, nil
	}
	d, err := parseSimpleDuration(t)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (want e.g. 100ms, 10s, 1m, PT0.5S; a bare number is milliseconds): %w", s, err)
	}
	return d, nil
}

// parseSimpleDuration handles ^([+-]?\d+)([a-zA-Z]{0,2})$.
func parseSimpleDuration(t string) (time.Duration, error) {
	i := 0
	if t[0] == '+' || t[0] == '-' {
		i = 1
	}
	j := i
	for j < len(t) && t[j] >= '0' && t[j] <= '9' {
		j++
	}
	if j == i {
		return 0, fmt.Errorf("no digits")
	}
	unit := strings.ToLower(t[j:])
	var mult time.Duration
	switch unit {
	case "ns":
		mult = time.Nanosecond
	case "us":
		mult = time.Microsecond
	case "", "ms":
		mult = time.Millisecond
	case "s":
		mult = time.Second
	case "m":
		mult = time.Minute
	case "h":
		mult = time.Hour
	case "d":
		mult = 24 * time.Hour
	default:
		return 0, fmt.Errorf("unknown unit %q (want ns, us, ms, s, m, h or d)", t[j:])
	}
	n := new(big.Int)
	if _, ok := n.SetString(t[:j], 10); !ok {
		return 0, fmt.Errorf("bad number %q", t[:j])
	}
	n.Mul(n, big.NewInt(int64(mult)))
	if !n.IsInt64() {
		return 0, fmt.Errorf("out of range")
	}
	return time.Duration(n.Int64()), nil
}

// parseISODuration follows java.time.Duration.parse: [+-]P[nD][T[nH][nM][n[.f]S]], each
// number optionally signed, at least one part.
func parseISODuration(t string) (time.Duration, error) {
	neg := false
	if t[0] == '+' || t[0] == '-' {
		neg = t[0] == '-'
		t = t[1:]
	}
	t = t[1:] // the P
	total := new(big.Int)
	parts := 0
	inTime := false
	order := 0 // D=1, H=2, M=3, S=4: each at most once, in order
	for len(t) > 0 {
		if t[0] == 'T' || t[0] == 't' {
			if inTime {
				return 0, fmt.Errorf("time designator twice")
			}
			inTime = true
			t = t[1:]
			if len(t) == 0 {
				return 0, fmt.Errorf("no parts after the time designator")
			}
			continue
		}
		k := 0
		if t[k] == '+' || t[k] == '-' {
			k++
		}
		ds := k
		for k < len(t) && t[k] >= '0' && t[k] <= '9' {
			k++
		}
		if k == ds {
			return 0, fmt.Errorf("expected a number at %q", t)
		}
		num := t[:k]
		frac := ""
		if k < len(t) && (t[k] == '.' || t[k] == ',') {
			f := k + 1
			for f < len(t) && t[f] >= '0' && t[f] <= '9' {
				f++
			}
			if f-(k+1) > 9 {
				return 0, fmt.Errorf("more than 9 fraction digits")
			}
			frac = t[k+1 : f]
			k = f
		}
		if k >= len(t) {
			return 0, fmt.Errorf("number %q without a unit", t)
		}
		u := t[k] | 0x20
		t = t[k+1:]
		var unitNanos int64
		var o int
		switch {
		case u == 'd' && !inTime:
			unitNanos, o = int64(24*time.Hour), 1
		case u == 'h' && inTime:
			unitNanos, o = int64(time.Hour), 2
		case u == 'm' && inTime:
			unitNanos, o = int64(time.Minute), 3
		case u == 's' && inTime:
			unitNanos, o = int64(time.Second), 4
		default:
			return 0, fmt.Errorf("unexpected unit %q", string(rune(u)))
		}
		if o <= order {
			return 0, fmt.Errorf("parts out of order")
		}
		if frac != "" && o != 4 {
			return 0, fmt.Errorf("fraction only allowed in seconds")
		}
		order = o
		n := new(big.Int)
		if _, ok := n.SetString(num, 10); !ok {
			return 0, fmt.Errorf("bad number %q", num)
		}
		n.Mul(n, big.NewInt(unitNanos))
		if frac != "" {
			fn := new(big.Int)
			fn.SetString((frac + "000000000")[:9], 10)
			if strings.HasPrefix(num, "-") {
				fn.Neg(fn)
			}
			n.Add(n, fn)
		}
		total.Add(total, n)
		parts++
	}
	if parts == 0 {
		return 0, fmt.Errorf("no parts")
	}
	if neg {
		total.Neg(total)
	}
	if !total.IsInt64() || total.Int64() == math.MinInt64 {
		return 0, fmt.Errorf("out of range")
	}
	return time.Duration(total.Int64()), nil
}
