package collect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// pct is a percentage as the actuator writes it ("50.0%"); a bare number and
// null are accepted too. Unparseable text is an error.
type pct float64

func (p *pct) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*p = pct(math.NaN())
		return nil
	}
	var s string
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	} else {
		s = string(b)
	}
	v, err := parseJavaFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"))
	if err != nil {
		return fmt.Errorf("percentage %q: %w", s, err)
	}
	*p = pct(v)
	return nil
}

// parseJavaFloat parses Java's Float/Double.toString output (and Prometheus' +Inf).
func parseJavaFloat(s string) (float64, error) {
	switch s {
	case "NaN":
		return math.NaN(), nil
	case "Infinity", "+Inf":
		return math.Inf(1), nil
	case "-Infinity", "-Inf":
		return math.Inf(-1), nil
	}
	return strconv.ParseFloat(s, 64)
}

// count is a JSON number that may be null (NaN) or written as a float.
type count float64

func (c *count) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*c = count(math.NaN())
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("count %s: %w", b, err)
	}
	*c = count(v)
	return nil
}

// breakerDetails is CircuitBreakerDetails (and the health indicator's details).
type breakerDetails struct {
	FailureRate           pct    `json:"failureRate"`
	SlowCallRate          pct    `json:"slowCallRate"`
	FailureRateThreshold  pct    `json:"failureRateThreshold"`
	SlowCallRateThreshold pct    `json:"slowCallRateThreshold"`
	BufferedCalls         count  `json:"bufferedCalls"`
	FailedCalls           count  `json:"failedCalls"`
	SlowCalls             count  `json:"slowCalls"`
	SlowFailedCalls       count  `json:"slowFailedCalls"`
	NotPermittedCalls     count  `json:"notPermittedCalls"`
	State                 string `json:"state"`
}

func unknownDetails() breakerDetails {
	n := math.NaN()
	return breakerDetails{pct(n), pct(n), pct(n), pct(n), count(n), count(n), count(n), count(n), count(n), ""}
}

func (d breakerDetails) sample(name string) BreakerSample {
	s := newBreakerSample(name, "")
	s.State = d.State
	s.FailureRate, s.SlowCallRate = float64(d.FailureRate), float64(d.SlowCallRate)
	s.FailureRateThreshold, s.SlowCallRateThreshold = float64(d.FailureRateThreshold), float64(d.SlowCallRateThreshold)
	s.Buffered, s.Failed, s.Slow = float64(d.BufferedCalls), float64(d.FailedCalls), float64(d.SlowCalls)
	s.SlowFailed, s.NotPermitted = float64(d.SlowFailedCalls), float64(d.NotPermittedCalls)
	return s
}

var validStates = map[string]bool{"CLOSED": true, "OPEN": true, "HALF_OPEN": true, "DISABLED": true, "FORCED_OPEN": true, "METRICS_ONLY": true}

// checkJSONBody rejects bodies that are obviously not JSON with a clear reason.
func checkJSONBody(b []byte) error {
	t := bytes.TrimSpace(b)
	switch {
	case len(t) == 0:
		return errors.New("empty body")
	case t[0] == '<':
		return fmt.Errorf("body is HTML or XML, not JSON (starts %q)", snippet(t, 40))
	case t[0] != '{':
		return fmt.Errorf("body is not a JSON object (starts %q)", snippet(t, 40))
	}
	return nil
}

func snippet(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// ParseCircuitBreakers decodes GET /actuator/circuitbreakers. Resilience4j 2.x
// answers with an object of details per breaker (samples); before 2.0.0 it
// answered with a list of names (names, and no samples). Samples are sorted by name.
func ParseCircuitBreakers(body []byte) (samples []BreakerSample, names []string, err error) {
	if err := checkJSONBody(body); err != nil {
		return nil, nil, err
	}
	var top struct {
		CircuitBreakers json.RawMessage `json:"circuitBreakers"`
	}
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, nil, fmt.Errorf("circuitbreakers JSON: %w", err)
	}
	raw := bytes.TrimSpace(top.CircuitBreakers)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, errors.New(`circuitbreakers JSON: no "circuitBreakers" member`)
	}
	if raw[0] == '[' {
		if err := json.Unmarshal(raw, &names); err != nil {
			return nil, nil, fmt.Errorf("circuitbreakers JSON: name list: %w", err)
		}
		sort.Strings(names)
		return nil, names, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, nil, fmt.Errorf(`circuitbreakers JSON: "circuitBreakers" is neither an object nor a list: %w`, err)
	}
	for name, r := range m {
		d := unknownDetails()
		if err := json.Unmarshal(r, &d); err != nil {
			return nil, nil, fmt.Errorf("circuitbreakers JSON: breaker %q: %w", name, err)
		}
		if d.State != "" && !validStates[d.State] {
			return nil, nil, fmt.Errorf("circuitbreakers JSON: breaker %q: unknown state %q", name, d.State)
		}
		samples = append(samples, d.sample(name))
		names = append(names, name)
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i].Name < samples[j].Name })
	sort.Strings(names)
	return samples, names, nil
}

// ParseHealth decodes GET /actuator/health (the circuitBreakers component) or
// GET /actuator/health/circuitBreakers. Breakers without details (the health
// endpoint hides them unless show-details is on) are an error naming the fix.
func ParseHealth(body []byte) ([]BreakerSample, error) {
	if err := checkJSONBody(body); err != nil {
		return nil, err
	}
	type node struct {
		Status     string                     `json:"status"`
		Components map[string]json.RawMessage `json:"components"`
		Details    map[string]json.RawMessage `json:"details"`
	}
	var top node
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, fmt.Errorf("health JSON: %w", err)
	}
	comp := top
	if top.Components != nil {
		raw, ok := top.Components["circuitBreakers"]
		if !ok {
			return nil, errors.New("health JSON: no circuitBreakers component (set management.health.circuitbreakers.enabled=true and register-health-indicator: true)")
		}
		comp = node{}
		if err := json.Unmarshal(raw, &comp); err != nil {
			return nil, fmt.Errorf("health JSON: circuitBreakers component: %w", err)
		}
	}
	if comp.Details == nil {
		return nil, errors.New("health JSON: circuitBreakers shows no details (set management.endpoint.health.show-details=always)")
	}
	var out []BreakerSample
	for name, raw := range comp.Details {
		var cb struct {
			Status  string          `json:"status"`
			Details json.RawMessage `json:"details"`
		}
		if err := json.Unmarshal(raw, &cb); err != nil {
			return nil, fmt.Errorf("health JSON: breaker %q: %w", name, err)
		}
		d := unknownDetails()
		if len(cb.Details) == 0 {
			return nil, fmt.Errorf("health JSON: breaker %q has no details (set management.endpoint.health.show-details=always)", name)
		}
		if err := json.Unmarshal(cb.Details, &d); err != nil {
			return nil, fmt.Errorf("health JSON: breaker %q: %w", name, err)
		}
		if d.State != "" && !validStates[d.State] {
			return nil, fmt.Errorf("health JSON: breaker %q: unknown state %q", name, d.State)
		}
		out = append(out, d.sample(name))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ParseJavaTime parses ZonedDateTime.toString() output such as
// "2024-10-15T13:22:48.477677565Z[Etc/UTC]" or "2017-01-10T15:39+01:00[Europe/Berlin]".
func ParseJavaTime(s string) (time.Time, error) {
	t := strings.TrimSpace(s)
	if strings.HasSuffix(t, "]") {
		if i := strings.LastIndexByte(t, '['); i >= 0 {
			t = t[:i]
		}
	}
	if v, err := time.Parse(time.RFC3339Nano, t); err == nil {
		return v, nil
	}
	if v, err := time.Parse("2006-01-02T15:04Z07:00", t); err == nil {
		return v, nil
	}
	if v, err := time.Parse("2006-01-02T15:04:05.999999999Z07:00:00", t); err == nil {
		return v, nil
	}
	return time.Time{}, fmt.Errorf("creationTime %q is not a ZonedDateTime", s)
}

type eventDTO struct {
	CircuitBreakerName string `json:"circuitBreakerName"`
	TimeLimiterName    string `json:"timeLimiterName"`
	RetryName          string `json:"retryName"`
	Type               string `json:"type"`
	CreationTime       string `json:"creationTime"`
	ErrorMessage       string `json:"errorMessage"`
	DurationInMs       *int64 `json:"durationInMs"`
	StateTransition    string `json:"stateTransition"`
	NumberOfAttempts   int    `json:"numberOfAttempts"`
}

// parseEvents decodes an event list under member key, for one event kind.
func parseEvents(body []byte, key, kind string) ([]Event, error) {
	if err := checkJSONBody(body); err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, fmt.Errorf("%s JSON: %w", key, err)
	}
	raw, ok := top[key]
	if !ok {
		return nil, fmt.Errorf("%s JSON: no %q member", key, key)
	}
	var dtos []eventDTO
	if err := json.Unmarshal(raw, &dtos); err != nil {
		return nil, fmt.Errorf("%s JSON: %w", key, err)
	}
	out := make([]Event, 0, len(dtos))
	for i, d := range dtos {
		e, err := eventFromDTO(&d, kind)
		if err != nil {
			return nil, fmt.Errorf("%s JSON: event %d%w", key, i, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// eventFromDTO checks and converts one decoded event; its errors start with
// ": " or " has" so they read well after "event N".
func eventFromDTO(d *eventDTO, kind string) (Event, error) {
	name := d.CircuitBreakerName
	switch kind {
	case KindTimeLimiter:
		name = d.TimeLimiterName
	case KindRetry:
		name = d.RetryName
	}
	if name == "" || d.Type == "" {
		return Event{}, errors.New(" has no name or type")
	}
	t, err := ParseJavaTime(d.CreationTime)
	if err != nil {
		return Event{}, fmt.Errorf(": %w", err)
	}
	e := Event{Kind: kind, Name: name, Type: d.Type, CreationTime: t, RawTime: d.CreationTime,
		StateTransition: d.StateTransition, ErrorMessage: d.ErrorMessage, DurationMs: -1, NumberOfAttempts: d.NumberOfAttempts}
	if d.DurationInMs != nil {
		e.DurationMs = *d.DurationInMs
	}
	if e.Type == "STATE_TRANSITION" {
		if _, _, ok := splitTransition(e.StateTransition); !ok {
			return Event{}, fmt.Errorf(": bad stateTransition %q", e.StateTransition)
		}
	}
	return e, nil
}

// ParseCircuitBreakerEvents decodes GET /actuator/circuitbreakerevents.
func ParseCircuitBreakerEvents(body []byte) ([]Event, error) {
	return parseEvents(body, "circuitBreakerEvents", KindCircuitBreaker)
}

// ParseTimeLimiterEvents decodes GET /actuator/timelimiterevents.
func ParseTimeLimiterEvents(body []byte) ([]Event, error) {
	return parseEvents(body, "timeLimiterEvents", KindTimeLimiter)
}

// ParseRetryEvents decodes GET /actuator/retryevents.
func ParseRetryEvents(body []byte) ([]Event, error) {
	return parseEvents(body, "retryEvents", KindRetry)
}

// splitTransition splits "HALF_OPEN_TO_OPEN" into its two states.
func splitTransition(s string) (from, to string, ok bool) {
	for st := range validStates {
		if strings.HasPrefix(s, st+"_TO_") {
			rest := s[len(st)+4:]
			if validStates[rest] {
				return st, rest, true
			}
		}
	}
	return "", "", false
}
