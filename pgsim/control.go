package pgsim

import (
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/cbprobe/cbprobe/pgsim/behavior"
)

// controlError is the control API's error body.
type controlError struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
}

// DecodeBehavior reads a behaviour JSON document on top of base: fields absent
// from data keep base's values. Errors are *behavior.FieldError naming the field.
func DecodeBehavior(base behavior.Behavior, data []byte) (behavior.Behavior, error) {
	b := base
	if err := b.UnmarshalJSON(data); err != nil {
		return base, err
	}
	return b, nil
}

func (s *Server) controlFail(w http.ResponseWriter, code int, err error) {
	body := controlError{Error: err.Error()}
	var fe *behavior.FieldError
	if errors.As(err, &fe) {
		body.Field = fe.Field
	}
	s.count(EndpointControl, OutcomeRejected)
	writeJSON(w, &s.bufs, code, body)
}

// handleControl serves /__pgsim/behavior (GET, PUT to replace, PATCH to merge),
// /__pgsim/stats (GET), /__pgsim/reset (POST) and /__pgsim/attempts (GET, JSON lines).
func (s *Server) handleControl(w http.ResponseWriter, r *http.Request) {
	if ok, why := s.controlAllowed(r); !ok {
		s.count(EndpointControl, OutcomeRejected)
		writeJSON(w, &s.bufs, http.StatusForbidden, controlError{Error: why})
		return
	}
	name := strings.TrimPrefix(r.URL.Path, "/__pgsim/")
	allow := map[string]string{"behavior": "GET, PUT, PATCH", "stats": "GET", "reset": "POST", "attempts": "GET"}[name]
	if allow == "" {
		s.count(EndpointControl, OutcomeRejected)
		writeJSON(w, &s.bufs, http.StatusNotFound, controlError{Error: "no control endpoint " + r.URL.Path + "; try /__pgsim/behavior, /__pgsim/stats, /__pgsim/reset or /__pgsim/attempts"})
		return
	}
	if !slices.Contains(strings.Split(allow, ", "), r.Method) {
		w.Header().Set("Allow", allow)
		s.count(EndpointControl, OutcomeRejected)
		writeJSON(w, &s.bufs, http.StatusMethodNotAllowed, controlError{Error: "method " + r.Method + " not allowed on " + r.URL.Path + "; use " + allow})
		return
	}
	switch {
	case name == "behavior" && r.Method == http.MethodGet:
		s.count(EndpointControl, OutcomeSuccess)
		writeJSON(w, &s.bufs, http.StatusOK, s.Behavior())
	case name == "behavior":
		buf := s.bufs.get()
		defer s.bufs.put(buf)
		if tooLarge, err := readBody(w, r, buf); tooLarge {
			s.controlFail(w, http.StatusRequestEntityTooLarge, errors.New("body over 1 MiB"))
			return
		} else if err != nil {
			s.controlFail(w, http.StatusBadRequest, errors.New("read body: "+err.Error()))
			return
		}
		base := behavior.DefaultBehavior()
		if r.Method == http.MethodPatch {
			base = s.Behavior()
		}
		b, err := DecodeBehavior(base, buf.Bytes())
		if err != nil {
			s.controlFail(w, http.StatusBadRequest, err)
			return
		}
		if err := s.SetBehavior(b); err != nil {
			s.controlFail(w, http.StatusBadRequest, err)
			return
		}
		s.logger.Info("pgsim behaviour changed", "behavior", b.String())
		s.count(EndpointControl, OutcomeSuccess)
		writeJSON(w, &s.bufs, http.StatusOK, b)
	case name == "stats":
		s.count(EndpointControl, OutcomeSuccess)
		writeJSON(w, &s.bufs, http.StatusOK, s.Stats())
	case name == "reset":
		drain(r)
		s.ResetStats()
		s.count(EndpointControl, OutcomeSuccess)
		w.WriteHeader(http.StatusNoContent)
	case name == "attempts":
		s.count(EndpointControl, OutcomeSuccess)
		WriteNDJSON(w, s.Attempts())
	}
}
