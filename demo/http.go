package demo

import (
	"net/http"
	"strings"

	"github.com/cbprobe/cbprobe/breaker"
)

// Actuator content type Spring Boot 3 answers with unless asked for plain JSON.
const actuatorV3 = "application/vnd.spring-boot.actuator.v3+json"

// Handler returns the service's routes: the order and payment API and the actuator.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/orders", s.handleCreateOrder)
	mux.HandleFunc("GET /api/v1/orders/{id}", s.handleGetOrder)
	mux.HandleFunc("POST /api/v1/payments", s.handlePay)
	mux.HandleFunc("POST /api/v1/payments/callback", s.handleCallback)

	mux.HandleFunc("GET /actuator", s.handleLinks)
	mux.HandleFunc("GET /actuator/circuitbreakers", s.exposed("circuitbreakers", s.handleCircuitBreakers))
	mux.HandleFunc("POST /actuator/circuitbreakers/{name}", s.exposed("circuitbreakers", s.handleUpdateState))
	// The selector path has no read operation in Spring: 405 with Spring's error body.
	mux.HandleFunc("GET /actuator/circuitbreakers/{name}", s.exposed("circuitbreakers", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", "POST")
		s.springError(w, r, http.StatusMethodNotAllowed)
	}))
	mux.HandleFunc("GET /actuator/circuitbreakerevents", s.exposed("circuitbreakerevents", s.handleCBEvents))
	mux.HandleFunc("GET /actuator/circuitbreakerevents/{name}", s.exposed("circuitbreakerevents", s.handleCBEvents))
	mux.HandleFunc("GET /actuator/circuitbreakerevents/{name}/{type}", s.exposed("circuitbreakerevents", s.handleCBEvents))
	mux.HandleFunc("GET /actuator/timelimiters", s.exposed("timelimiters", s.handleTimeLimiters))
	mux.HandleFunc("GET /actuator/timelimiterevents", s.exposed("timelimiterevents", s.handleTLEvents))
	mux.HandleFunc("GET /actuator/timelimiterevents/{name}", s.exposed("timelimiterevents", s.handleTLEvents))
	mux.HandleFunc("GET /actuator/timelimiterevents/{name}/{type}", s.exposed("timelimiterevents", s.handleTLEvents))
	mux.HandleFunc("GET /actuator/retries", s.exposed("retries", s.handleRetries))
	mux.HandleFunc("GET /actuator/retryevents", s.exposed("retryevents", s.handleRetryEvents))
	mux.HandleFunc("GET /actuator/retryevents/{name}", s.exposed("retryevents", s.handleRetryEvents))
	mux.HandleFunc("GET /actuator/retryevents/{name}/{type}", s.exposed("retryevents", s.handleRetryEvents))
	mux.HandleFunc("GET /actuator/health", s.exposed("health", s.handleHealth))
	mux.HandleFunc("GET /actuator/health/{component}", s.exposed("health", s.handleHealthComponent))
	mux.HandleFunc("GET /actuator/prometheus", s.exposed("prometheus", s.handlePrometheus))
	return mux
}

// actuatorIDs lists the endpoint ids the service offers, in /actuator link order.
func actuatorIDs() []string {
	return []string{"circuitbreakers", "circuitbreakerevents", "health", "prometheus", "retries", "retryevents", "timelimiters", "timelimiterevents"}
}

// exposed answers 404 for an endpoint that management.endpoints.web.exposure does not expose.
func (s *Service) exposed(id string, h http.HandlerFunc) http.HandlerFunc {
	if s.mgmt.Exposed(id) {
		return h
	}
	return func(w http.ResponseWriter, r *http.Request) { s.springError(w, r, http.StatusNotFound) }
}

// springError writes Spring Boot's error body: {"timestamp","status","error","path"}.
func (s *Service) springError(w http.ResponseWriter, r *http.Request, status int) {
	var ow objWriter
	ow.open()
	ow.str("timestamp", s.clock.Now().In(s.zone.Loc).Format("2006-01-02T15:04:05.000-07:00"))
	ow.num("status", int64(status))
	ow.str("error", http.StatusText(status))
	ow.str("path", r.URL.Path)
	ow.close()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(ow.b)
}

func writeActuator(w http.ResponseWriter, r *http.Request, status int, body []byte) {
	ct := actuatorV3
	if a := r.Header.Get("Accept"); strings.Contains(a, "application/json") && !strings.Contains(a, "actuator") {
		ct = "application/json"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func (s *Service) handleLinks(w http.ResponseWriter, r *http.Request) {
	base := "http://" + r.Host + "/actuator"
	var ow objWriter
	ow.open()
	ow.key("_links")
	ow.open()
	link := func(name, href string, templated bool) {
		ow.key(name)
		ow.open()
		ow.str("href", href)
		ow.key("templated")
		if templated {
			ow.b = append(ow.b, "true"...)
		} else {
			ow.b = append(ow.b, "false"...)
		}
		ow.close()
	}
	link("self", base, false)
	for _, id := range actuatorIDs() {
		if !s.mgmt.Exposed(id) {
			continue
		}
		switch id {
		case "circuitbreakers":
			link(id, base+"/circuitbreakers", false)
			link(id+"-name", base+"/circuitbreakers/{name}", true)
		case "circuitbreakerevents", "timelimiterevents", "retryevents":
			link(id+"-name-eventType", base+"/"+id+"/{name}/{eventType}", true)
			link(id+"-name", base+"/"+id+"/{name}", true)
			link(id, base+"/"+id, false)
		case "health":
			link("health-path", base+"/health/{*path}", true)
			link(id, base+"/health", false)
		default:
			link(id, base+"/"+id, false)
		}
	}
	ow.close()
	ow.close()
	writeActuator(w, r, http.StatusOK, ow.b)
}

func (s *Service) handleCircuitBreakers(w http.ResponseWriter, r *http.Request) {
	writeActuator(w, r, http.StatusOK, RenderCircuitBreakers(s.reg.breakerViews()))
}

// handleUpdateState is POST /actuator/circuitbreakers/{name} {"updateState": "CLOSE"|"FORCE_OPEN"|"DISABLE"}.
func (s *Service) handleUpdateState(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	var req struct {
		UpdateState string `json:"updateState"`
	}
	if err := decodeBody(r, &req); err != nil {
		s.springError(w, r, http.StatusBadRequest)
		return
	}
	var target breaker.State
	switch req.UpdateState {
	case "CLOSE":
		target = breaker.StateClosed
	case "FORCE_OPEN":
		target = breaker.StateForcedOpen
	case "DISABLE":
		target = breaker.StateDisabled
	default:
		s.springError(w, r, http.StatusBadRequest)
		return
	}
	e, err := s.reg.breaker(name)
	if err != nil {
		s.logger.Warn("create circuit breaker", "name", name, "err", err)
		s.springError(w, r, http.StatusInternalServerError)
		return
	}
	if err := e.cb.TransitionTo(target); err != nil {
		// Every state may move to CLOSED, FORCED_OPEN and DISABLED; keep the
		// library's answer (an IllegalStateTransitionException is a 500).
		s.logger.Warn("update circuit breaker state", "name", name, "err", err)
		s.springError(w, r, http.StatusInternalServerError)
		return
	}
	writeActuator(w, r, http.StatusOK, RenderUpdateState(name, e.cb.State()))
}

func cbEventTypes() []string {
	out := make([]string, 0, 8)
	for t := breaker.EventSuccess; t <= breaker.EventSlowCallRateExceeded; t++ {
		out = append(out, t.String())
	}
	return out
}

// eventType reads the optional {type} segment; a type Java's valueOf rejects
// is an IllegalArgumentException: HTTP 500.
func (s *Service) eventType(w http.ResponseWriter, r *http.Request, allowed []string) (string, bool) {
	raw := r.PathValue("type")
	if raw == "" {
		return "", true
	}
	t, ok := eventTypeFilter(raw, allowed)
	if !ok {
		s.springError(w, r, http.StatusInternalServerError)
		return "", false
	}
	return t, true
}

func (s *Service) handleCBEvents(w http.ResponseWriter, r *http.Request) {
	typ, ok := s.eventType(w, r, cbEventTypes())
	if !ok {
		return
	}
	writeActuator(w, r, http.StatusOK, RenderCBEvents(s.reg.cbEvents(r.PathValue("name"), typ), s.zone, s.cfg.Boot4))
}

func (s *Service) handleTimeLimiters(w http.ResponseWriter, r *http.Request) {
	names, _ := s.reg.timeLimiterViews()
	writeActuator(w, r, http.StatusOK, RenderNames("timeLimiters", names))
}

func (s *Service) handleTLEvents(w http.ResponseWriter, r *http.Request) {
	typ, ok := s.eventType(w, r, []string{"SUCCESS", "TIMEOUT", "ERROR"})
	if !ok {
		return
	}
	writeActuator(w, r, http.StatusOK, RenderTLEvents(s.reg.tlEvents(r.PathValue("name"), typ), s.zone))
}

func (s *Service) handleRetries(w http.ResponseWriter, r *http.Request) {
	names, _ := s.reg.retryViews()
	writeActuator(w, r, http.StatusOK, RenderNames("retries", names))
}

func (s *Service) handleRetryEvents(w http.ResponseWriter, r *http.Request) {
	typ, ok := s.eventType(w, r, []string{"RETRY", "ERROR", "SUCCESS", "IGNORED_ERROR"})
	if !ok {
		return
	}
	writeActuator(w, r, http.StatusOK, RenderRetryEvents(s.reg.retryEvents(r.PathValue("name"), typ), s.zone))
}

func (s *Service) handleHealth(w http.ResponseWriter, r *http.Request) {
	body, status := RenderHealth(s.reg.healthViews(), s.health)
	writeActuator(w, r, HealthHTTPStatus(status), body)
}

func (s *Service) handleHealthComponent(w http.ResponseWriter, r *http.Request) {
	if !s.health.ShowComponents {
		s.springError(w, r, http.StatusNotFound)
		return
	}
	switch r.PathValue("component") {
	case "circuitBreakers":
		if !s.health.BreakersEnabled {
			s.springError(w, r, http.StatusNotFound)
			return
		}
		body, status := RenderBreakersHealth(s.reg.healthViews(), s.health)
		writeActuator(w, r, HealthHTTPStatus(status), body)
	case "ping":
		writeActuator(w, r, http.StatusOK, []byte(`{"status":"UP"}`))
	default:
		s.springError(w, r, http.StatusNotFound)
	}
}

func (s *Service) handlePrometheus(w http.ResponseWriter, r *http.Request) {
	b := s.RenderPrometheus(make([]byte, 0, 8<<10))
	w.Header().Set("Content-Type", PromContentType)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// RenderPrometheus appends the /actuator/prometheus body for the current state to b.
func (s *Service) RenderPrometheus(b []byte) []byte {
	_, tls := s.reg.timeLimiterViews()
	_, rts := s.reg.retryViews()
	m := Meters{Breakers: s.reg.breakerViews(), TimeLimiters: tls, Retries: rts, SpringCloud: true, Tags: s.tags}
	s.mu.Lock()
	pool := s.pool
	s.mu.Unlock()
	if pool != nil {
		m.Bulkheads = []BulkheadView{pool.view()}
	}
	return RenderMeters(b, s.promFormat, m)
}

// Endpoint is one route of the service.
type Endpoint struct {
	// Method is the HTTP method.
	Method string
	// Path is the path below the base URL; {x} marks a path variable.
	Path string
}

// Endpoints lists the API routes and the exposed actuator routes.
func (s *Service) Endpoints() []Endpoint {
	out := []Endpoint{
		{"POST", "/api/v1/orders"},
		{"GET", "/api/v1/orders/{orderId}"},
		{"POST", "/api/v1/payments"},
		{"POST", "/api/v1/payments/callback"},
	}
	for _, id := range actuatorIDs() {
		if !s.mgmt.Exposed(id) {
			continue
		}
		switch id {
		case "circuitbreakers":
			out = append(out, Endpoint{"GET", "/actuator/circuitbreakers"}, Endpoint{"POST", "/actuator/circuitbreakers/{name}"})
		case "circuitbreakerevents", "timelimiterevents", "retryevents":
			out = append(out, Endpoint{"GET", "/actuator/" + id + "[/{name}[/{type}]]"})
		case "health":
			out = append(out, Endpoint{"GET", "/actuator/health"})
			if s.health.ShowComponents && s.health.BreakersEnabled {
				out = append(out, Endpoint{"GET", "/actuator/health/circuitBreakers"})
			}
		default:
			out = append(out, Endpoint{"GET", "/actuator/" + id})
		}
	}
	return out
}
