package pgsim

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/cbprobe/cbprobe/pgsim/behavior"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const paymentsPath = "/api/v1/payments"

// meta is the envelope's meta object; empty fields are left out (NON_NULL).
type meta struct {
	Result    string `json:"result"`
	ErrorCode string `json:"errorCode,omitempty"`
	Message   string `json:"message,omitempty"`
}

// envelope is {"meta":{...},"data":{...}}; a failure has no data key.
type envelope struct {
	Meta meta `json:"meta"`
	Data any  `json:"data,omitempty"`
}

type transactionResponse struct {
	TransactionKey string `json:"transactionKey"`
	Status         string `json:"status"`
	Reason         string `json:"reason,omitempty"`
}

type orderResponse struct {
	OrderID      string                `json:"orderId"`
	Transactions []transactionResponse `json:"transactions"`
}

// bufPool recycles response buffers.
type bufPool struct{ p sync.Pool }

func (b *bufPool) get() *bytes.Buffer {
	if v, ok := b.p.Get().(*bytes.Buffer); ok {
		v.Reset()
		return v
	}
	return new(bytes.Buffer)
}

func (b *bufPool) put(buf *bytes.Buffer) {
	if buf.Cap() <= 64<<10 {
		b.p.Put(buf)
	}
}

// writeJSON writes v as the whole response with status code.
func writeJSON(w http.ResponseWriter, pool *bufPool, code int, v any) {
	buf := pool.get()
	defer pool.put(buf)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		buf.Reset()
		buf.WriteString(`{"meta":{"result":"FAIL","errorCode":"Internal Server Error","message":"` + msgInternal + `"}}`)
		code = http.StatusInternalServerError
	}
	body := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	h := w.Header()
	h.Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

func (s *Server) writeFail(w http.ResponseWriter, code int, errorCode, msg string) {
	writeJSON(w, &s.bufs, code, envelope{Meta: meta{Result: "FAIL", ErrorCode: errorCode, Message: msg}})
}

func (s *Server) writeOK(w http.ResponseWriter, data any) {
	writeJSON(w, &s.bufs, http.StatusOK, envelope{Meta: meta{Result: "SUCCESS"}, Data: data})
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(paymentsPath, s.handlePayments)
	mux.HandleFunc(paymentsPath+"/", s.handlePayment)
	mux.Handle("/metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/__pgsim/", s.handleControl)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.count(EndpointOther, OutcomeRejected)
		s.writeFail(w, http.StatusNotFound, codeNotFound, msgNotFound)
	})
	return mux
}

// count records one answered request in the stats and the metrics.
func (s *Server) count(endpoint, outcome string) {
	s.requests.add(endpoint, outcome)
	s.metrics.request(endpoint, outcome)
}

func (s *Server) methodNotAllowed(w http.ResponseWriter, endpoint, method, allow string) {
	s.count(endpoint, OutcomeRejected)
	w.Header().Set("Allow", allow)
	s.writeFail(w, http.StatusMethodNotAllowed, codeNotAllowed, msgMethod(method))
}

// userID returns X-USER-ID; ok is false when the header is absent (an empty
// value is accepted, as the original does).
func userID(r *http.Request) (string, bool) {
	v, ok := r.Header["X-User-Id"]
	if !ok || len(v) == 0 {
		return "", false
	}
	return v[0], true
}

// handlePayments serves /api/v1/payments: POST creates, GET lists by orderId.
func (s *Server) handlePayments(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		s.create(w, r)
	case http.MethodGet, http.MethodHead:
		s.list(w, r)
	default:
		s.methodNotAllowed(w, EndpointCreate, r.Method, "GET, POST")
	}
}

// handlePayment serves GET /api/v1/payments/{transactionKey}.
func (s *Server) handlePayment(w http.ResponseWriter, r *http.Request) {
	key := strings.TrimPrefix(r.URL.Path, paymentsPath+"/")
	if key == "" || strings.Contains(key, "/") {
		s.count(EndpointOther, OutcomeRejected)
		s.writeFail(w, http.StatusNotFound, codeNotFound, msgNotFound)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.methodNotAllowed(w, EndpointGet, r.Method, "GET")
		return
	}
	s.enter()
	defer s.leave()
	user, ok := userID(r)
	if !ok {
		s.count(EndpointGet, OutcomeRejected)
		s.writeFail(w, http.StatusBadRequest, codeBadRequest, msgUserHeader)
		return
	}
	t, ok := s.store.get(user, key)
	if !ok {
		s.count(EndpointGet, OutcomeRejected)
		s.writeFail(w, http.StatusNotFound, codeNotFound, msgTxNotFound(key))
		return
	}
	s.count(EndpointGet, OutcomeSuccess)
	s.writeOK(w, t)
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	s.enter()
	defer s.leave()
	user, ok := userID(r)
	if !ok {
		s.count(EndpointList, OutcomeRejected)
		s.writeFail(w, http.StatusBadRequest, codeBadRequest, msgUserHeader)
		return
	}
	q := r.URL.Query()
	if _, present := q["orderId"]; !present {
		s.count(EndpointList, OutcomeRejected)
		s.writeFail(w, http.StatusBadRequest, codeBadRequest, msgMissingParam("orderId"))
		return
	}
	orderID := q.Get("orderId")
	list := s.store.byOrderNewestFirst(user, orderID)
	if len(list) == 0 {
		s.count(EndpointList, OutcomeRejected)
		s.writeFail(w, http.StatusNotFound, codeNotFound, msgOrderNotFound(orderID))
		return
	}
	resp := orderResponse{OrderID: orderID, Transactions: make([]transactionResponse, len(list))}
	for i, t := range list {
		resp.Transactions[i] = transactionResponse{TransactionKey: t.TransactionKey, Status: t.Status, Reason: t.Reason}
	}
	s.count(EndpointList, OutcomeSuccess)
	s.writeOK(w, resp)
}

func (s *Server) enter() {
	s.inFlight.Add(1)
	s.metrics.inFlight.Inc()
}

func (s *Server) leave() {
	s.inFlight.Add(-1)
	s.metrics.inFlight.Dec()
}

// readBody reads at most maxBodyBytes; tooLarge reports a longer body.
func readBody(w http.ResponseWriter, r *http.Request, buf *bytes.Buffer) (tooLarge bool, err error) {
	_, err = buf.ReadFrom(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return true, err
	}
	return false, err
}

// create serves POST /api/v1/payments: header, body, validation (all without
// delay), then the behaviour's decision, the delay and the answer.
func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	s.enter()
	defer s.leave()
	arrived := time.Now()
	user, ok := userID(r)
	if !ok {
		s.reject(w, arrived, "", "", http.StatusBadRequest, codeBadRequest, msgUserHeader)
		return
	}
	buf := s.bufs.get()
	defer s.bufs.put(buf)
	if tooLarge, err := readBody(w, r, buf); tooLarge {
		s.reject(w, arrived, user, "", http.StatusRequestEntityTooLarge, codeTooLarge, msgTooLarge)
		return
	} else if err != nil {
		s.reject(w, arrived, user, "", http.StatusBadRequest, codeBadRequest, msgBodyUnreadable)
		return
	}
	req, err := DecodePayment(buf.Bytes(), s.cfg.CallbackPrefix)
	if err != nil {
		var re *RequestError
		if errors.As(err, &re) {
			s.noteRefusal(re.Status, re.Message, req.CallbackURL)
			s.reject(w, arrived, user, re.OrderID, re.Status, codeBadRequest, re.Message)
		} else {
			s.reject(w, arrived, user, "", http.StatusBadRequest, codeBadRequest, msgBadRequest)
		}
		return
	}

	// Draw the decision and record the attempt under one lock, in arrival order.
	s.decideMu.Lock()
	d := s.behav.Decide(s.rng)
	outcome := d.Outcome.String()
	s.log.Record(arrived, user, req.OrderID, outcome, d.Injected)
	s.decideMu.Unlock()

	delay := s.scaled(d.Delay)
	if d.Outcome != behavior.OutcomeHang {
		s.metrics.injected.Observe(delay.Seconds())
	}
	// The delay counts from arrival, so parsing and locking do not add to it.
	if !WaitOrCut(r, time.Until(arrived.Add(delay)), s.cut) {
		// The client gave up or the server is closing: nothing to answer.
		s.count(EndpointCreate, outcome)
		if d.Outcome == behavior.OutcomeHang {
			s.metrics.injected.Observe(time.Since(arrived).Seconds())
		}
		return
	}
	s.count(EndpointCreate, outcome)
	switch d.Outcome {
	case behavior.OutcomeSuccess:
		t := s.store.create(time.Now(), user, req)
		s.scheduleSettlement(t)
		// The key is plain ASCII: write the envelope without reflection.
		buf := s.bufs.get()
		buf.WriteString(`{"meta":{"result":"SUCCESS"},"data":{"transactionKey":"`)
		buf.WriteString(t.TransactionKey)
		buf.WriteString(`","status":"PENDING"}}`)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(buf.Bytes())
		s.bufs.put(buf)
	case behavior.OutcomeError:
		s.writeFail(w, http.StatusInternalServerError, codeInternal, msgUnstable)
	case behavior.OutcomeHang:
		s.metrics.injected.Observe(delay.Seconds())
		s.abort(w, false)
	case behavior.OutcomeReset:
		s.abort(w, true)
	}
}

// reject answers a 4xx at once and logs the attempt as rejected.
func (s *Server) reject(w http.ResponseWriter, arrived time.Time, user, order string, code int, errorCode, msg string) {
	if errorCode != codeBadRequest || !isValidationMessage(msg) {
		s.noteRefusal(code, msg, "")
	}
	s.decideMu.Lock()
	s.log.Record(arrived, user, order, OutcomeRejected, 0)
	s.decideMu.Unlock()
	s.count(EndpointCreate, OutcomeRejected)
	s.writeFail(w, code, errorCode, msg)
}

// abort ends the connection without an HTTP answer: with a TCP reset
// (SO_LINGER 0) when reset is true, with a plain close otherwise.
func (s *Server) abort(w http.ResponseWriter, reset bool) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Not hijackable (HTTP/2): answer 500 instead; nothing better exists.
		s.writeFail(w, http.StatusInternalServerError, codeInternal, msgInternal)
		return
	}
	if tcp, ok := conn.(interface{ SetLinger(int) error }); ok && reset {
		_ = tcp.SetLinger(0)
	}
	_ = conn.Close()
}

// drain discards what is left of a request body (used by control endpoints).
func drain(r *http.Request) { _, _ = io.Copy(io.Discard, io.LimitReader(r.Body, maxBodyBytes)) }
