package demo

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// JavaFloat formats f as Java's Float.toString does (JDK 19+ shortest digits):
// "50.0", "-1.0", "33.333332", "1.0E-4", "NaN", "Infinity".
func JavaFloat(f float32) string { return javaFloating(float64(f), 32) }

// JavaDouble formats d as Java's Double.toString does: "0.036", "6.0",
// "33.33333206176758", "1.64088634006E9", "NaN", "Infinity".
func JavaDouble(d float64) string { return javaFloating(d, 64) }

// PromDouble formats d as a Prometheus Java writer does: Double.toString for
// finite values and NaN, "+Inf" and "-Inf" for the infinities.
func PromDouble(d float64) string {
	switch {
	case math.IsInf(d, 1):
		return "+Inf"
	case math.IsInf(d, -1):
		return "-Inf"
	}
	return JavaDouble(d)
}

func javaFloating(x float64, bits int) string {
	switch {
	case math.IsNaN(x):
		return "NaN"
	case math.IsInf(x, 1):
		return "Infinity"
	case math.IsInf(x, -1):
		return "-Infinity"
	case x == 0:
		if math.Signbit(x) {
			return "-0.0"
		}
		return "0.0"
	}
	a := math.Abs(x)
	if a >= 1e-3 && a < 1e7 {
		s := strconv.FormatFloat(x, 'f', -1, bits)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	// Computerized scientific notation: d.dddE<exp>, no '+', no leading zeros.
	s := strconv.FormatFloat(x, 'e', -1, bits) // e.g. "1.64088634006e+09", "1e-04"
	mant, exp, _ := strings.Cut(s, "e")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	n, _ := strconv.Atoi(exp) // always well-formed: strconv wrote it
	return mant + "E" + strconv.Itoa(n)
}

// Zone is the time zone creation times are printed in, as a JVM default zone.
type Zone struct {
	// Loc converts instants to local date-times.
	Loc *time.Location
	// ID is the region id printed in brackets ("Etc/UTC", "Asia/Seoul"); empty
	// for a fixed-offset zone, which Java prints without brackets.
	ID string
}

// DefaultZone is Etc/UTC, the default zone of a JVM in a stock container image.
func DefaultZone() Zone { return Zone{Loc: time.UTC, ID: "Etc/UTC"} }

// ParseZone turns a JVM zone id into a Zone: a region id such as "Asia/Seoul"
// or "Etc/UTC" (printed with its [id] suffix), "Z" or "UTC+09:00"-style fixed
// offsets such as "+09:00" (printed without a suffix).
func ParseZone(id string) (Zone, error) {
	switch id {
	case "", "Etc/UTC":
		return DefaultZone(), nil
	case "Z":
		return Zone{Loc: time.UTC}, nil
	}
	if id[0] == '+' || id[0] == '-' {
		t, err := time.Parse("-07:00", id)
		if err != nil {
			return Zone{}, &zoneError{id: id}
		}
		_, off := t.Zone()
		return Zone{Loc: time.FixedZone(id, off)}, nil
	}
	loc, err := time.LoadLocation(id)
	if err != nil {
		return Zone{}, &zoneError{id: id, err: err}
	}
	return Zone{Loc: loc, ID: id}, nil
}

type zoneError struct {
	id  string
	err error
}

func (e *zoneError) Error() string {
	if e.err != nil {
		return "time zone " + strconv.Quote(e.id) + ": " + e.err.Error()
	}
	return "time zone " + strconv.Quote(e.id) + ": want a region id such as Asia/Seoul or an offset such as +09:00"
}

// ExitCode marks a bad zone as a configuration error.
func (e *zoneError) ExitCode() int { return 2 }

// JavaZonedDateTime formats t as Java's ZonedDateTime.toString() in zone z:
// "2024-10-15T13:22:48.477677565Z[Etc/UTC]", "2017-01-10T15:39:17.117+01:00[Europe/Berlin]".
// Seconds are left out when seconds and nanoseconds are both zero; the fraction
// has 3, 6 or 9 digits.
func JavaZonedDateTime(t time.Time, z Zone) string {
	loc := z.Loc
	if loc == nil {
		loc = time.UTC
	}
	t = t.In(loc)
	b := make([]byte, 0, 48)
	b = t.AppendFormat(b, "2006-01-02T15:04")
	sec, ns := t.Second(), t.Nanosecond()
	if sec > 0 || ns > 0 {
		b = append(b, ':', byte('0'+sec/10), byte('0'+sec%10))
		if ns > 0 {
			switch {
			case ns%1_000_000 == 0:
				b = appendPadded(append(b, '.'), ns/1_000_000, 3)
			case ns%1_000 == 0:
				b = appendPadded(append(b, '.'), ns/1_000, 6)
			default:
				b = appendPadded(append(b, '.'), ns, 9)
			}
		}
	}
	_, off := t.Zone()
	if off == 0 {
		b = append(b, 'Z')
	} else {
		sign := byte('+')
		if off < 0 {
			sign, off = '-', -off
		}
		b = append(b, sign)
		b = appendPadded(b, off/3600, 2)
		b = append(b, ':')
		b = appendPadded(b, off/60%60, 2)
		if off%60 != 0 {
			b = append(b, ':')
			b = appendPadded(b, off%60, 2)
		}
	}
	if z.ID != "" {
		b = append(b, '[')
		b = append(b, z.ID...)
		b = append(b, ']')
	}
	return string(b)
}

func appendPadded(b []byte, v, width int) []byte {
	s := strconv.Itoa(v)
	for i := len(s); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}
