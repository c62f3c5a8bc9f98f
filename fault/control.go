package fault

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/cbprobe/cbprobe/pgsim"
	"github.com/cbprobe/cbprobe/pgsim/behavior"
)

// maxControlBody caps a control API request body (1 MiB).
const maxControlBody = 1 << 20

// Stats is a JSON-able snapshot of the server.
type Stats struct {
	// Started is when the server was built.
	Started time.Time `json:"started"`
	// Seed is the seed in use.
	Seed int64 `json:"seed"`
	// Mode is "proxy" or "stub".
	Mode string `json:"mode"`
	// Upstream is the upstream base URL (proxy mode) and Stub the route file (stub mode).
	Upstream string `json:"upstream,omitempty"`
	Stub     string `json:"stub,omitempty"`
	// Behavior is the default behaviour and Rules the scoped rules.
	Behavior Behavior `json:"behavior"`
	Rules    []Rule   `json:"rules"`
	// PhasesSince is when the rules' phases started.
	PhasesSince time.Time `json:"phasesSince"`
	// Attempts summarises the attempt log, per correlation key and per route.
	Attempts AttemptStats `json:"attempts"`
	// InFlight is the number of requests being served.
	InFlight int64 `json:"inFlight"`
}

// Stats returns a snapshot.
func (s *Server) Stats() Stats {
	st := s.state.Load()
	out := Stats{
		Started: s.started, Seed: s.seed, Mode: "proxy", Behavior: st.def, Rules: st.rules,
		PhasesSince: st.since, Attempts: s.log.Stats(), InFlight: s.inFlight.Load(),
	}
	if out.Rules == nil {
		out.Rules = []Rule{}
	}
	if s.upstream != nil {
		out.Upstream = s.upstream.Redacted()
	}
	if s.cfg.Stub != nil {
		out.Mode, out.Stub = "stub", s.cfg.Stub.File
	}
	return out
}

// controlError is the control API's error body.
type controlError struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"error":"encode: `+strings.ReplaceAll(err.Error(), `"`, `'`)+`"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

func controlFail(w http.ResponseWriter, code int, err error) {
	body := controlError{Error: err.Error()}
	var fe *FieldError
	var be *behavior.FieldError
	switch {
	case errors.As(err, &fe):
		body.Field = fe.Field
	case errors.As(err, &be):
		body.Field = be.Field
	}
	writeJSON(w, code, body)
}

// readControlBody reads at most 1 MiB; false when it already answered.
func readControlBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxControlBody))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		controlFail(w, http.StatusRequestEntityTooLarge, errors.New("body over 1 MiB"))
		return nil, false
	case err != nil:
		controlFail(w, http.StatusBadRequest, errors.New("read body: "+err.Error()))
		return nil, false
	}
	return data, true
}

// handleControl serves /__fault/behavior (GET; PUT replaces it on top of
// NoFaults; PATCH merges), /__fault/rules (GET; PUT replaces the rule set and
// restarts its phases), /__fault/stats (GET), /__fault/reset (POST) and
// /__fault/attempts (GET, JSON lines). Bad values answer 400 naming the field.
func (s *Server) handleControl(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, ControlPrefix)
	if name == "metrics" && s.cfg.MetricsPath == ControlPrefix+"metrics" {
		s.promH.ServeHTTP(w, r)
		return
	}
	allow := map[string]string{"behavior": "GET, PUT, PATCH", "rules": "GET, PUT", "stats": "GET", "reset": "POST", "attempts": "GET"}[name]
	if allow == "" {
		controlFail(w, http.StatusNotFound, errors.New("no control endpoint "+r.URL.Path+"; try "+ControlPrefix+"behavior, rules, stats, reset or attempts"))
		return
	}
	if !slices.Contains(strings.Split(allow, ", "), r.Method) {
		w.Header().Set("Allow", allow)
		controlFail(w, http.StatusMethodNotAllowed, errors.New("method "+r.Method+" not allowed on "+r.URL.Path+"; use "+allow))
		return
	}
	switch {
	case r.Method == http.MethodGet && name == "behavior":
		writeJSON(w, http.StatusOK, s.Behavior())
	case r.Method == http.MethodGet && name == "rules":
		rules := s.Rules()
		if rules == nil {
			rules = []Rule{}
		}
		writeJSON(w, http.StatusOK, rules)
	case name == "behavior":
		data, ok := readControlBody(w, r)
		if !ok {
			return
		}
		base := NoFaults()
		if r.Method == http.MethodPatch {
			base = s.Behavior()
		}
		b, err := DecodeBehavior(base, data)
		if err == nil {
			err = s.SetBehavior(b)
		}
		if err != nil {
			controlFail(w, http.StatusBadRequest, err)
			return
		}
		s.logger.Info("fault behaviour changed", "behavior", b.String())
		writeJSON(w, http.StatusOK, b)
	case name == "rules":
		data, ok := readControlBody(w, r)
		if !ok {
			return
		}
		rules, err := DecodeRules("", data)
		if err == nil {
			err = s.SetRules(rules)
		}
		if err != nil {
			var fe *FieldError
			if errors.As(err, &fe) {
				fe.Line = 0 // lines mean little in a JSON body
			}
			controlFail(w, http.StatusBadRequest, err)
			return
		}
		s.logger.Info("fault rules changed", "rules", len(rules))
		if rules == nil {
			rules = []Rule{}
		}
		writeJSON(w, http.StatusOK, rules)
	case name == "stats":
		writeJSON(w, http.StatusOK, s.Stats())
	case name == "reset":
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, maxControlBody))
		s.ResetStats()
		w.WriteHeader(http.StatusNoContent)
	case name == "attempts":
		pgsim.WriteNDJSON(w, s.Attempts())
	}
}
