package demo

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cbprobe/cbprobe/breaker"
)

// objWriter writes one compact JSON object with keys in the order they are
// added, as Jackson writes a POJO in field declaration order.
type objWriter struct {
	b     []byte
	first []bool
}

func (w *objWriter) open() { w.b = append(w.b, '{'); w.first = append(w.first, true) }
func (w *objWriter) close() {
	w.b = append(w.b, '}')
	w.first = w.first[:len(w.first)-1]
}
func (w *objWriter) openArray() { w.b = append(w.b, '['); w.first = append(w.first, true) }
func (w *objWriter) closeArray() {
	w.b = append(w.b, ']')
	w.first = w.first[:len(w.first)-1]
}

// sep writes a comma unless this is the first member of the innermost container.
func (w *objWriter) sep() {
	top := len(w.first) - 1
	if top >= 0 {
		if !w.first[top] {
			w.b = append(w.b, ',')
		}
		w.first[top] = false
	}
}

func (w *objWriter) key(k string) { w.sep(); w.b = appendJSONString(w.b, k); w.b = append(w.b, ':') }
func (w *objWriter) str(k, v string) {
	w.key(k)
	w.b = appendJSONString(w.b, v)
}
func (w *objWriter) num(k string, v int64) { w.key(k); w.b = strconv.AppendInt(w.b, v, 10) }
func (w *objWriter) null(k string)         { w.key(k); w.b = append(w.b, "null"...) }
func (w *objWriter) elemStr(v string)      { w.sep(); w.b = appendJSONString(w.b, v) }

// appendJSONString writes s as a JSON string the way Jackson does: only '"',
// '\\' and control characters are escaped; other characters are written as UTF-8.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c == '\b':
				b = append(b, '\\', 'b')
			case c == '\f':
				b = append(b, '\\', 'f')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, "\uFFFD"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

func pct(f float32) string { return JavaFloat(f) + "%" }

// RenderCircuitBreakers renders GET /actuator/circuitbreakers for views sorted by name.
func RenderCircuitBreakers(views []BreakerView) []byte {
	var w objWriter
	w.open()
	w.key("circuitBreakers")
	w.open()
	for _, v := range views {
		w.key(v.Name)
		w.open()
		w.str("failureRate", pct(v.FailureRate))
		w.str("slowCallRate", pct(v.SlowCallRate))
		w.str("failureRateThreshold", pct(v.FailureRateThreshold))
		w.str("slowCallRateThreshold", pct(v.SlowCallRateThreshold))
		w.num("bufferedCalls", int64(v.BufferedCalls))
		w.num("failedCalls", int64(v.FailedCalls))
		w.num("slowCalls", int64(v.SlowCalls))
		w.num("slowFailedCalls", int64(v.SlowFailedCalls))
		w.num("notPermittedCalls", v.NotPermittedCalls)
		w.str("state", v.State.String())
		w.close()
	}
	w.close()
	w.close()
	return w.b
}

// RenderUpdateState renders the answer of POST /actuator/circuitbreakers/{name}.
func RenderUpdateState(name string, state breaker.State) []byte {
	var w objWriter
	w.open()
	w.str("circuitBreakerName", name)
	w.str("currentState", state.String())
	w.str("message", name+" state has been changed successfully")
	w.close()
	return w.b
}

// RenderCBEvents renders GET /actuator/circuitbreakerevents in the given order;
// boot4 writes stateTransition as Spring Boot 4 does, with the enum's toString().
func RenderCBEvents(events []CBEventView, z Zone, boot4 bool) []byte {
	var w objWriter
	w.open()
	w.key("circuitBreakerEvents")
	w.openArray()
	for _, e := range events {
		w.sep()
		w.open()
		w.str("circuitBreakerName", e.Breaker)
		w.str("type", e.Type)
		w.str("creationTime", JavaZonedDateTime(e.Time, z))
		// Absent fields are null, as the real actuator writes them (Spring Boot 3.5 and 4.0).
		if e.ErrorMessage != "" {
			w.str("errorMessage", e.ErrorMessage)
		} else {
			w.null("errorMessage")
		}
		if e.HasDuration {
			w.num("durationInMs", e.DurationMs)
		} else {
			w.null("durationInMs")
		}
		if e.StateTransition != "" {
			st := e.StateTransition
			if from, to, ok := strings.Cut(st, "_TO_"); ok && boot4 {
				st = "State transition from " + from + " to " + to // StateTransition.toString()
			}
			w.str("stateTransition", st)
		} else {
			w.null("stateTransition")
		}
		w.close()
	}
	w.closeArray()
	w.close()
	return w.b
}

// RenderTLEvents renders GET /actuator/timelimiterevents.
func RenderTLEvents(events []TLEventView, z Zone) []byte {
	var w objWriter
	w.open()
	w.key("timeLimiterEvents")
	w.openArray()
	for _, e := range events {
		w.sep()
		w.open()
		w.str("timeLimiterName", e.Limiter)
		w.str("type", e.Type)
		w.str("creationTime", JavaZonedDateTime(e.Time, z))
		w.close()
	}
	w.closeArray()
	w.close()
	return w.b
}

// RenderRetryEvents renders GET /actuator/retryevents.
func RenderRetryEvents(events []RetryEventView, z Zone) []byte {
	var w objWriter
	w.open()
	w.key("retryEvents")
	w.openArray()
	for _, e := range events {
		w.sep()
		w.open()
		w.str("retryName", e.Retry)
		w.str("type", e.Type)
		w.str("creationTime", JavaZonedDateTime(e.Time, z))
		if e.ErrorMessage != "" {
			w.str("errorMessage", e.ErrorMessage)
		}
		w.num("numberOfAttempts", int64(e.NumberOfAttempts))
		w.close()
	}
	w.closeArray()
	w.close()
	return w.b
}

// RenderNames renders {"<key>":["a","b"]} for /actuator/timelimiters and /actuator/retries.
func RenderNames(key string, names []string) []byte {
	var w objWriter
	w.open()
	w.key(key)
	w.openArray()
	for _, n := range names {
		w.elemStr(n)
	}
	w.closeArray()
	w.close()
	return w.b
}

// Health statuses of Spring Boot and the circuit breaker health indicator.
const (
	StatusUp              = "UP"
	StatusDown            = "DOWN"
	StatusOutOfService    = "OUT_OF_SERVICE"
	StatusUnknown         = "UNKNOWN"
	StatusCircuitOpen     = "CIRCUIT_OPEN"
	StatusCircuitHalfOpen = "CIRCUIT_HALF_OPEN"
)

// DefaultStatusOrder is Spring Boot's SimpleStatusAggregator order.
func DefaultStatusOrder() []string {
	return []string{StatusDown, StatusOutOfService, StatusUp, StatusUnknown}
}

// BreakerHealthStatus maps a breaker state to its health status as
// CircuitBreakersHealthIndicator does.
func BreakerHealthStatus(s breaker.State, allowToFail bool) string {
	switch s {
	case breaker.StateClosed:
		return StatusUp
	case breaker.StateOpen:
		if allowToFail {
			return StatusDown
		}
		return StatusCircuitOpen
	case breaker.StateHalfOpen:
		return StatusCircuitHalfOpen
	}
	return StatusUnknown
}

// AggregateStatus is SimpleStatusAggregator.getAggregateStatus: statuses not in
// order are dropped, the first by order wins, and nothing left gives UNKNOWN.
func AggregateStatus(statuses []string, order []string) string {
	best := -1
	for _, s := range statuses {
		for i, o := range order {
			if o == s && (best < 0 || i < best) {
				best = i
			}
		}
	}
	if best < 0 {
		return StatusUnknown
	}
	return order[best]
}

// breakersHealth is the circuitBreakers component: its status and per-breaker healths.
func breakersHealth(views []HealthView, order []string) (string, []string) {
	statuses := make([]string, len(views))
	for i, v := range views {
		statuses[i] = BreakerHealthStatus(v.State, v.AllowHealthIndicatorToFail)
	}
	return AggregateStatus(statuses, order), statuses
}

// writeBreakersComponent writes the circuitBreakers component object.
func writeBreakersComponent(w *objWriter, views []HealthView, order []string, details bool) string {
	status, statuses := breakersHealth(views, order)
	w.open()
	w.str("status", status)
	if details && len(views) > 0 {
		w.key("details")
		w.open()
		for i, v := range views {
			w.key(v.Name)
			w.open()
			w.str("status", statuses[i])
			w.key("details")
			w.open()
			w.str("failureRate", pct(v.FailureRate))
			w.str("failureRateThreshold", pct(v.FailureRateThreshold))
			w.str("slowCallRate", pct(v.SlowCallRate))
			w.str("slowCallRateThreshold", pct(v.SlowCallRateThreshold))
			w.num("bufferedCalls", int64(v.BufferedCalls))
			w.num("slowCalls", int64(v.SlowCalls))
			w.num("slowFailedCalls", int64(v.SlowFailedCalls))
			w.num("failedCalls", int64(v.FailedCalls))
			w.num("notPermittedCalls", v.NotPermittedCalls)
			w.str("state", v.State.String())
			w.close()
			w.close()
		}
		w.close()
	}
	w.close()
	return status
}

// HealthOptions are the management.endpoint.health settings the renderer needs.
type HealthOptions struct {
	// BreakersEnabled is management.health.circuitbreakers.enabled (default false).
	BreakersEnabled bool
	// ShowComponents and ShowDetails are show-components / show-details = always.
	ShowComponents, ShowDetails bool
	// Order is management.endpoint.health.status.order; nil means DefaultStatusOrder.
	Order []string
	// Boot4 adds Spring Boot 4's liveness and readiness probes (components
	// livenessState and readinessState, and their groups).
	Boot4 bool
}

// RenderHealth renders GET /actuator/health and returns the overall status.
// The components are circuitBreakers (when enabled) and ping, in name order.
func RenderHealth(views []HealthView, o HealthOptions) ([]byte, string) {
	order := o.Order
	if len(order) == 0 {
		order = DefaultStatusOrder()
	}
	statuses := []string{StatusUp} // ping
	if o.BreakersEnabled {
		st, _ := breakersHealth(views, order)
		statuses = append(statuses, st)
	}
	overall := AggregateStatus(statuses, order)
	var w objWriter
	w.open()
	w.str("status", overall)
	if o.ShowComponents {
		w.key("components")
		w.open()
		if o.BreakersEnabled {
			w.key("circuitBreakers")
			writeBreakersComponent(&w, views, order, o.ShowDetails)
		}
		probes := []string{"ping"}
		if o.Boot4 {
			probes = []string{"livenessState", "ping", "readinessState"}
		}
		for _, p := range probes {
			w.key(p)
			w.open()
			w.str("status", StatusUp)
			w.close()
		}
		w.close()
		if o.Boot4 {
			w.key("groups")
			w.openArray()
			w.elemStr("liveness")
			w.elemStr("readiness")
			w.closeArray()
		}
	}
	w.close()
	return w.b, overall
}

// RenderBreakersHealth renders GET /actuator/health/circuitBreakers and returns its status.
func RenderBreakersHealth(views []HealthView, o HealthOptions) ([]byte, string) {
	order := o.Order
	if len(order) == 0 {
		order = DefaultStatusOrder()
	}
	var w objWriter
	st := writeBreakersComponent(&w, views, order, o.ShowDetails)
	return w.b, st
}

// HealthHTTPStatus is Spring Boot's default status mapping: DOWN and
// OUT_OF_SERVICE answer 503, everything else 200.
func HealthHTTPStatus(status string) int {
	if status == StatusDown || status == StatusOutOfService {
		return 503
	}
	return 200
}
