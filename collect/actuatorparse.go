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
	// SetFailureRateThreshold is the threshold's key in resilience4j 0.16-0.17's
	// per-breaker health indicator (a typo of the library's).
	SetFailureRateThreshold pct `json:"setFailureRateThreshold"`
}

func unknownDetails() breakerDetails {
	n := math.NaN()
	return breakerDetails{FailureRate: pct(n), SlowCallRate: pct(n), FailureRateThreshold: pct(n), SlowCallRateThreshold: pct(n),
		BufferedCalls: count(n), FailedCalls: count(n), SlowCalls: count(n), SlowFailedCalls: count(n), NotPermittedCalls: count(n),
		SetFailureRateThreshold: pct(n)}
}

func (d breakerDetails) sample(name string) BreakerSample {
	s := newBreakerSample(name, "")
	s.State = d.State
	if math.IsNaN(float64(d.FailureRateThreshold)) {
		d.FailureRateThreshold = d.SetFailureRateThreshold
	}
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

// ParseHealth decodes GET /actuator/health or GET
// /actuator/health/circuitBreakers, in every layout Spring Boot and
// Resilience4j have used:
//   - Spring Boot 2.2 and later: indicators under "components";
//   - Spring Boot 2.0/2.1: indicators under a top-level "details";
//   - Spring Boot 1.x: indicators at the top level, their details inline;
//   - resilience4j 1.0 and later: one "circuitBreakers" indicator whose
//     details hold one health object a breaker;
//   - resilience4j 0.x: one indicator a breaker, named "<name>CircuitBreaker"
//     (the bean <name>CircuitBreakerHealthIndicator), 0.10-0.13 without a
//     "state" detail (the state is then read from the status when it says it).
//
// Indicators that are not breakers (diskSpace, ping, ...) are never taken for
// breakers. Hidden details (show-details off) and a missing breaker indicator
// are errors naming the setting that fixes them.
func ParseHealth(body []byte) ([]BreakerSample, error) {
	if err := checkJSONBody(body); err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, fmt.Errorf("health JSON: %w", err)
	}
	// The indicators, whichever layout holds them.
	var container map[string]json.RawMessage
	for _, key := range []string{"components", "details"} {
		if raw, ok := top[key]; ok {
			if err := json.Unmarshal(raw, &container); err != nil {
				return nil, fmt.Errorf("health JSON: %q: %w", key, err)
			}
			break
		}
	}
	if container == nil && len(top) > 1 { // Spring Boot 1.x: indicators at the top level
		container = top
	}
	if container == nil {
		return nil, errors.New("health JSON: only a status, no details (set management.endpoint.health.show-details=always)")
	}
	// resilience4j 1.0 and later: the circuitBreakers indicator.
	if raw, ok := container["circuitBreakers"]; ok {
		var comp map[string]json.RawMessage
		if err := json.Unmarshal(raw, &comp); err != nil {
			return nil, fmt.Errorf("health JSON: circuitBreakers component: %w", err)
		}
		breakers, ok := comp["details"]
		if !ok {
			breakers, ok = comp["components"]
		}
		if !ok {
			if anyDetails(container, "circuitBreakers") {
				return nil, errors.New("health JSON: the circuitBreakers component lists no breaker: no breaker registers its health indicator " +
					"(register-health-indicator is false by default; set it under resilience4j.circuitbreaker.configs.default or instances.<name>)")
			}
			return nil, errors.New("health JSON: circuitBreakers shows no details (set management.endpoint.health.show-details=always)")
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(breakers, &m); err != nil {
			return nil, fmt.Errorf("health JSON: circuitBreakers details: %w", err)
		}
		out := make([]BreakerSample, 0, len(m))
		for name, raw := range m {
			smp, isBreaker, err := healthBreaker(name, raw)
			if err != nil {
				return nil, err
			}
			if !isBreaker {
				return nil, fmt.Errorf("health JSON: breaker %q has no details (set management.endpoint.health.show-details=always)", name)
			}
			out = append(out, smp)
		}
		sortSamples(out)
		return out, nil
	}
	// resilience4j 0.x: one indicator a breaker, "<name>CircuitBreaker"; or the
	// component endpoint itself (/health/circuitBreakers), whose details are
	// the breakers.
	var perBreaker, component []BreakerSample
	for key, raw := range container {
		if key == "status" {
			continue
		}
		smp, isBreaker, err := healthBreaker(key, raw)
		if err != nil || !isBreaker {
			continue // another indicator (diskSpace, db, ...): not a breaker
		}
		if name, ok := strings.CutSuffix(key, "CircuitBreaker"); ok && name != "" {
			smp.Name = name
			perBreaker = append(perBreaker, smp)
		} else {
			component = append(component, smp)
		}
	}
	if len(perBreaker) > 0 {
		sortSamples(perBreaker)
		return perBreaker, nil
	}
	if len(component) > 0 {
		sortSamples(component)
		return component, nil
	}
	if !anyDetails(container, "") && len(container) > 0 && top["components"] != nil {
		return nil, errors.New("health JSON: components show no details (set management.endpoint.health.show-details=always)")
	}
	return nil, errors.New("health JSON: no circuitBreakers component (set management.health.circuitbreakers.enabled=true and register-health-indicator: true)")
}

// anyDetails reports whether an indicator other than skip shows details
// (then show-details is on).
func anyDetails(container map[string]json.RawMessage, skip string) bool {
	for k, raw := range container {
		if k == skip {
			continue
		}
		var n struct {
			Details map[string]json.RawMessage `json:"details"`
		}
		if json.Unmarshal(raw, &n) == nil && len(n.Details) > 0 {
			return true
		}
	}
	return false
}

// healthBreaker decodes one breaker's health object ({"status", "details"},
// or Spring Boot 1.x's inline details). isBreaker is false when the object
// carries no breaker details (another indicator, or details hidden).
func healthBreaker(name string, raw json.RawMessage) (BreakerSample, bool, error) {
	var h struct {
		Status  string          `json:"status"`
		Details json.RawMessage `json:"details"`
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		return BreakerSample{}, false, fmt.Errorf("health JSON: breaker %q: %w", name, err)
	}
	det := h.Details
	if len(det) == 0 {
		det = raw // Spring Boot 1.x: details inline
	}
	var keys map[string]json.RawMessage
	if json.Unmarshal(det, &keys) != nil {
		return BreakerSample{}, false, nil
	}
	_, hasState := keys["state"]
	_, hasRate := keys["failureRate"]
	_, hasBuffered := keys["bufferedCalls"]
	if !hasState && !(hasRate && hasBuffered) {
		return BreakerSample{}, false, nil
	}
	d := unknownDetails()
	if err := json.Unmarshal(det, &d); err != nil {
		return BreakerSample{}, false, fmt.Errorf("health JSON: breaker %q: %w", name, err)
	}
	if d.State != "" && !validStates[d.State] {
		return BreakerSample{}, false, fmt.Errorf("health JSON: breaker %q: unknown state %q", name, d.State)
	}
	if d.State == "" { // resilience4j 0.10-0.13: no state detail; the status says it when it can
		d.State = map[string]string{"UP": "CLOSED", "DOWN": "OPEN", "CIRCUIT_OPEN": "OPEN", "CIRCUIT_HALF_OPEN": "HALF_OPEN"}[h.Status]
	}
	return d.sample(name), true, nil
}

func sortSamples(s []BreakerSample) {
	sort.Slice(s, func(i, j int) bool { return s[i].Name < s[j].Name })
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
		from, to, ok := splitTransition(e.StateTransition)
		if !ok {
			return Event{}, fmt.Errorf(": bad stateTransition %q", e.StateTransition)
		}
		e.StateTransition = from + "_TO_" + to
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

// splitTransition splits "HALF_OPEN_TO_OPEN" into its two states. Spring Boot 4
// (Jackson 3 writes enums with toString()) sends "State transition from HALF_OPEN
// to OPEN" instead; both are read.
func splitTransition(s string) (from, to string, ok bool) {
	if rest, found := strings.CutPrefix(s, "State transition from "); found {
		from, to, found = strings.Cut(rest, " to ")
		return from, to, found && validStates[from] && validStates[to]
	}
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
