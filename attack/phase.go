package attack

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// MaxRate is the highest rate a phase may ask for, in requests per second.
const MaxRate = 1_000_000

// Phase is one step of an open-model traffic plan: Rate requests (flow runs)
// per second for Duration. A Rate of 0 is a real pause: no request is sent and
// the time passes.
type Phase struct {
	// Name labels the phase in results; ParsePhases defaults it to "phaseN" (1-based).
	Name string
	// Rate is requests per second; 0 means pause.
	Rate float64
	// Duration is how long the phase lasts; it is always > 0.
	Duration time.Duration
}

// Planned returns how many requests the phase schedules: one at every
// phase start + i/Rate, i = 0, 1, ... while that offset is below Duration.
func (p Phase) Planned() int {
	if p.Rate <= 0 || p.Duration <= 0 {
		return 0
	}
	n := p.Rate * p.Duration.Seconds()
	// Guard against float noise: 200/s * 2s must be 400, not 401.
	return int(math.Ceil(n - 1e-9))
}

// String formats the phase in the syntax ParsePhases reads, e.g. "burst=15/s:5s".
// The rate is written per second.
func (p Phase) String() string {
	s := strconv.FormatFloat(p.Rate, 'f', -1, 64) + "/s:" + p.Duration.String()
	if p.Name != "" {
		s = p.Name + "=" + s
	}
	return s
}

// FormatPhases joins phases with commas; ParsePhases(FormatPhases(p)) gives p back.
func FormatPhases(phases []Phase) string {
	parts := make([]string, len(phases))
	for i, p := range phases {
		parts[i] = p.String()
	}
	return strings.Join(parts, ",")
}

// PhaseError is a bad element of a phase list. Error() reads like
// `phase 2 "0/x:15s": unknown rate unit x`.
type PhaseError struct {
	// Index is the 1-based position of the element in the list (0: the whole list).
	Index int
	// Text is the element as written.
	Text string
	// Msg says what is wrong.
	Msg string
}

// Error implements error.
func (e *PhaseError) Error() string {
	if e.Index == 0 {
		return "phases: " + e.Msg
	}
	return fmt.Sprintf("phase %d %q: %s", e.Index, e.Text, e.Msg)
}

// ExitCode is 2: a bad phase list is a usage error.
func (e *PhaseError) ExitCode() int { return 2 }

// ParsePhases reads a comma-separated phase list such as
// "15/s:5s,0/s:15s,5/s:8s" or "burst=15/s:5s,pause=0/s:15s,900/m:10s".
// Each element is [name=]rate/unit:duration with unit s or m and a Go
// duration (time.ParseDuration) greater than zero. Unnamed phases are called
// "phase1".."phaseN" by position. Errors are *PhaseError naming the element.
func ParsePhases(s string) ([]Phase, error) {
	if strings.TrimSpace(s) == "" {
		return nil, &PhaseError{Msg: "empty phase list (want e.g. 15/s:5s,0/s:15s,5/s:8s)"}
	}
	elems := strings.Split(s, ",")
	phases := make([]Phase, 0, len(elems))
	seen := make(map[string]int, len(elems))
	for i, raw := range elems {
		idx := i + 1
		text := strings.TrimSpace(raw)
		p, msg := parsePhase(text, idx)
		if msg != "" {
			return nil, &PhaseError{Index: idx, Text: text, Msg: msg}
		}
		if prev, ok := seen[p.Name]; ok {
			return nil, &PhaseError{Index: idx, Text: text, Msg: fmt.Sprintf("name %s already used by phase %d", p.Name, prev)}
		}
		seen[p.Name] = idx
		phases = append(phases, p)
	}
	return phases, nil
}

// parsePhase parses one element; msg is non-empty on error.
func parsePhase(text string, idx int) (Phase, string) {
	if text == "" {
		return Phase{}, "empty phase (want rate/unit:duration, e.g. 15/s:5s)"
	}
	p := Phase{Name: fmt.Sprintf("phase%d", idx)}
	spec := text
	if name, rest, ok := strings.Cut(text, "="); ok {
		name = strings.TrimSpace(name)
		if name == "" {
			return p, "empty name before ="
		}
		for _, r := range name {
			if !(r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return p, fmt.Sprintf("name %q: only letters, digits, '-', '_' and '.' are allowed", name)
			}
		}
		p.Name = name
		spec = strings.TrimSpace(rest)
	}
	rateText, durText, ok := strings.Cut(spec, ":")
	if !ok {
		return p, "missing \":duration\" (want rate/unit:duration, e.g. 15/s:5s)"
	}
	num, unit, ok := strings.Cut(strings.TrimSpace(rateText), "/")
	if !ok {
		return p, fmt.Sprintf("rate %q has no unit (want e.g. 15/s or 900/m)", rateText)
	}
	num, unit = strings.TrimSpace(num), strings.TrimSpace(unit)
	rate, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(rate) || math.IsInf(rate, 0) {
		return p, fmt.Sprintf("bad rate %q: not a number", num)
	}
	if rate < 0 {
		return p, fmt.Sprintf("negative rate %s", num)
	}
	switch unit {
	case "s":
	case "m":
		rate /= 60
	case "":
		return p, "missing rate unit after / (want s or m)"
	default:
		return p, fmt.Sprintf("unknown rate unit %s (want s or m)", unit)
	}
	if rate > MaxRate {
		return p, fmt.Sprintf("rate %g/s above the maximum %d/s", rate, MaxRate)
	}
	durText = strings.TrimSpace(durText)
	if durText == "" {
		return p, "missing duration after :"
	}
	d, err := time.ParseDuration(durText)
	if err != nil {
		return p, fmt.Sprintf("bad duration %q (want e.g. 5s, 1m30s)", durText)
	}
	if d <= 0 {
		return p, fmt.Sprintf("duration %s must be greater than zero", durText)
	}
	p.Rate, p.Duration = rate, d
	return p, ""
}
