package fault

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/cbprobe/cbprobe/pgsim"
)

// ServeHTTP answers the control API, the metrics path, and otherwise applies
// the behaviour in effect to the request and forwards (or stubs) it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch p := r.URL.Path; {
	case strings.HasPrefix(p, ControlPrefix):
		s.handleControl(w, r)
	case p == s.cfg.MetricsPath:
		s.promH.ServeHTTP(w, r)
	default:
		s.serveAttempt(w, r)
	}
}

func (s *Server) getBuf() *bytes.Buffer {
	if b, ok := s.bufs.Get().(*bytes.Buffer); ok {
		b.Reset()
		return b
	}
	return new(bytes.Buffer)
}

func (s *Server) putBuf(b *bytes.Buffer) {
	if b.Cap() <= 1<<20 {
		s.bufs.Put(b)
	}
}

// serveAttempt is one attempt: decide, wait, then fault, forward or stub.
func (s *Server) serveAttempt(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	s.inFlight.Add(1)
	s.metrics.inFlight.Inc()
	defer func() {
		s.inFlight.Add(-1)
		s.metrics.inFlight.Dec()
	}()
	method := methodOf(r)
	route, beh := s.state.Load().match(method, r.URL.Path, s.now())
	var stubRoute *StubRoute
	if s.cfg.Stub != nil {
		stubRoute = s.cfg.Stub.match(method, r.URL.Path)
	}

	s.decideMu.Lock()
	d := beh.Decide(s.rng)
	var own time.Duration // the stub route's own latency
	if stubRoute != nil && stubRoute.Latency != nil && d.Kind != KindHang {
		own = stubRoute.Latency.Sample(s.rng)
	}
	s.decideMu.Unlock()

	a := Attempt{
		Time: arrived, Method: method, Path: r.URL.Path, Route: route, Fault: string(d.Kind),
		Injected: d.Delay, Key: CorrelationKey(r.Header, s.cfg.CorrelationHeaders),
	}
	defer func() {
		s.log.Record(a)
		s.metrics.request(route, a.Outcome)
	}()
	if d.Kind != KindHang {
		s.metrics.injected.Observe(d.Delay.Seconds())
	}
	// The delay counts from arrival, so parsing and locking do not add to it.
	if !pgsim.WaitOrCut(r, time.Until(arrived.Add(d.Delay+own)), s.cut) {
		if d.Kind == KindHang {
			a.Outcome = OutcomeHang
			a.Injected = time.Since(arrived)
			s.metrics.injected.Observe(a.Injected.Seconds())
			abort(w, false)
			return
		}
		a.Outcome = OutcomeCancelled
		return
	}
	switch d.Kind {
	case KindError:
		a.Outcome, a.Status = OutcomeError, beh.ErrorStatus
		writeBody(w, beh.ErrorStatus, beh.ErrorBody)
	case KindHang:
		a.Outcome = OutcomeHang
		s.metrics.injected.Observe(d.Delay.Seconds())
		abort(w, false)
	case KindReset:
		a.Outcome = OutcomeReset
		abort(w, true)
	case KindMalformed:
		a.Outcome = OutcomeMalformed
		malformed(w)
	case KindTruncate:
		s.truncate(w, r, stubRoute, &a)
	default:
		if s.cfg.Stub != nil {
			s.stub(w, r, stubRoute, &a)
		} else {
			s.forward(w, r, &a)
		}
	}
}

// writeBody answers status with body; JSON when body looks like JSON.
func writeBody(w http.ResponseWriter, status int, body string) {
	h := w.Header()
	ct := "text/plain; charset=utf-8"
	if t := strings.TrimLeft(body, " \t\r\n"); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		ct = "application/json"
	}
	h.Set("Content-Type", ct)
	h.Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// failJSON answers a fault-made error as {"error": msg}.
func failJSON(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(map[string]string{"error": msg})
	writeBody(w, status, string(b))
}

// abort ends the connection without an HTTP answer: a TCP reset (SO_LINGER 0)
// when reset is true, a plain close otherwise. Where the connection cannot be
// taken over (HTTP/2) the stream is aborted instead.
func abort(w http.ResponseWriter, reset bool) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tcp, ok := conn.(interface{ SetLinger(int) error }); ok && reset {
		_ = tcp.SetLinger(0)
	}
	_ = conn.Close()
}

// malformedBytes is what a malformed answer sends: not an HTTP status line.
const malformedBytes = "\x00\xffHTTP/1.1 2OO NOT-HTTP cbprobe-fault-malformed\r\n\x7f\x00\r\n\r\n"

func malformed(w http.ResponseWriter) {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_, _ = buf.WriteString(malformedBytes)
	_ = buf.Flush()
	_ = conn.Close()
}

// hopHeaders are removed in both directions (RFC 9110 §7.6.1, plus the
// legacy Proxy-Connection and Keep-Alive and the proxy authentication pair,
// as net/http/httputil does).
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

func isHopByHop(name string) bool {
	for _, h := range hopHeaders {
		if strings.EqualFold(h, name) {
			return true
		}
	}
	return false
}

// removeHopHeaders deletes the hop-by-hop headers and every header the
// Connection header names.
func removeHopHeaders(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				h.Del(f)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// outbound builds the upstream request for r.
func (s *Server) outbound(w http.ResponseWriter, r *http.Request) *http.Request {
	out := r.Clone(r.Context())
	u := *s.upstream
	u.Path = s.upstream.Path + r.URL.Path
	if r.URL.RawPath != "" {
		u.RawPath = s.upstream.Path + r.URL.RawPath
	}
	u.RawQuery = r.URL.RawQuery
	out.URL = &u
	out.Host = ""
	out.RequestURI = ""
	out.Close = false
	removeHopHeaders(out.Header)
	if r.ContentLength == 0 {
		out.Body = nil
	} else {
		out.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBody)
	}
	if ip, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		if prior := out.Header.Values("X-Forwarded-For"); len(prior) > 0 {
			ip = strings.Join(prior, ", ") + ", " + ip
		}
		out.Header.Set("X-Forwarded-For", ip)
	}
	return out
}

// roundTrip forwards r and answers the failures itself; resp is nil when the
// attempt is already answered (a.Outcome set).
func (s *Server) roundTrip(w http.ResponseWriter, r *http.Request, a *Attempt) *http.Response {
	t0 := time.Now()
	resp, err := s.transport.RoundTrip(s.outbound(w, r))
	if err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			a.Outcome, a.Status = OutcomeRejected, http.StatusRequestEntityTooLarge
			failJSON(w, a.Status, fmt.Sprintf("fault: request body over the %d-byte cap", s.cfg.MaxBody))
		case r.Context().Err() != nil:
			a.Outcome = OutcomeCancelled
		default:
			a.Outcome, a.Status = OutcomeUpstreamError, http.StatusBadGateway
			s.logger.Warn("fault upstream unreachable", "upstream", s.upstream.String(), "path", r.URL.Path, "err", err)
			failJSON(w, a.Status, fmt.Sprintf("fault: upstream %s unreachable: %v", s.upstream.Redacted(), err))
		}
		return nil
	}
	a.Upstream = time.Since(t0)
	s.metrics.upstream.Observe(a.Upstream.Seconds())
	if resp.ContentLength > s.cfg.MaxBody {
		resp.Body.Close()
		a.Outcome, a.Status = OutcomeUpstreamError, http.StatusBadGateway
		failJSON(w, a.Status, fmt.Sprintf("fault: upstream answer of %d bytes is over the %d-byte cap", resp.ContentLength, s.cfg.MaxBody))
		return nil
	}
	return resp
}

func copyHeader(dst, src http.Header) {
	for k, vv := range src {
		dst[k] = append(dst[k][:0:0], vv...)
	}
}

// forward streams the upstream's answer to the client.
func (s *Server) forward(w http.ResponseWriter, r *http.Request, a *Attempt) {
	resp := s.roundTrip(w, r, a)
	if resp == nil {
		return
	}
	defer resp.Body.Close()
	removeHopHeaders(resp.Header)
	copyHeader(w.Header(), resp.Header)
	w.WriteHeader(resp.StatusCode)
	a.Status = resp.StatusCode
	streaming := resp.ContentLength < 0
	rc := http.NewResponseController(w)
	bp := s.getBuf()
	defer s.putBuf(bp)
	buf := bp.AvailableBuffer()
	if cap(buf) < 32<<10 {
		bp.Grow(32 << 10)
		buf = bp.AvailableBuffer()
	}
	buf = buf[:32<<10]
	var total int64
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			total += int64(n)
			if total > s.cfg.MaxBody {
				a.Outcome = OutcomeUpstreamError
				s.logger.Warn("fault upstream answer over the cap; connection cut", "path", r.URL.Path, "cap", s.cfg.MaxBody)
				abort(w, false)
				return
			}
			if _, werr := w.Write(buf[:n]); werr != nil {
				a.Outcome = OutcomeCancelled
				return
			}
			if streaming {
				_ = rc.Flush()
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			if r.Context().Err() != nil {
				a.Outcome = OutcomeCancelled
				return
			}
			// The upstream failed mid-answer: the client must not see a clean end.
			a.Outcome = OutcomeUpstreamError
			s.logger.Warn("fault upstream failed mid-answer", "path", r.URL.Path, "err", rerr)
			abort(w, false)
			return
		}
	}
	a.Outcome = OutcomeSuccess
}

// answer is a complete answer held in memory (stub answers and truncation).
type answer struct {
	status int
	header http.Header
	body   []byte
}

// stubAnswer renders route's answer to r; ok is false when r is already
// answered (a.Outcome set).
func (s *Server) stubAnswer(w http.ResponseWriter, r *http.Request, route *StubRoute, a *Attempt) (answer, bool) {
	if route == nil {
		a.Outcome, a.Status = OutcomeRejected, http.StatusNotFound
		failJSON(w, a.Status, fmt.Sprintf("fault stub: no route in %s matches %s %s", s.cfg.Stub.File, a.Method, r.URL.Path))
		return answer{}, false
	}
	a.Route = a.Route + " > " + route.label()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			a.Outcome, a.Status = OutcomeRejected, http.StatusRequestEntityTooLarge
			failJSON(w, a.Status, fmt.Sprintf("fault: request body over the %d-byte cap", s.cfg.MaxBody))
		} else {
			a.Outcome = OutcomeCancelled
		}
		return answer{}, false
	}
	req := StubRequest{Method: a.Method, Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header, Body: string(body), Seq: s.seq.Add(1)}
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		_ = json.Unmarshal(body, &req.JSON)
	}
	var out bytes.Buffer
	if err := route.render(&out, req, s.cfg.MaxBody); err != nil {
		a.Outcome, a.Status = OutcomeUpstreamError, http.StatusInternalServerError
		s.logger.Warn("fault stub template failed", "file", s.cfg.Stub.File, "err", err)
		failJSON(w, a.Status, fmt.Sprintf("fault stub %s: %v", s.cfg.Stub.File, err))
		return answer{}, false
	}
	return answer{status: route.Status, header: route.Headers, body: out.Bytes()}, true
}

// stub answers r from its stub route.
func (s *Server) stub(w http.ResponseWriter, r *http.Request, route *StubRoute, a *Attempt) {
	ans, ok := s.stubAnswer(w, r, route, a)
	if !ok {
		return
	}
	copyHeader(w.Header(), ans.header)
	w.Header().Set("Content-Length", fmt.Sprint(len(ans.body)))
	w.WriteHeader(ans.status)
	_, _ = w.Write(ans.body)
	a.Outcome, a.Status = OutcomeSuccess, ans.status
}

// truncate sends the real answer with a Content-Length larger than the bytes
// written (half the body), then closes the connection.
func (s *Server) truncate(w http.ResponseWriter, r *http.Request, route *StubRoute, a *Attempt) {
	var ans answer
	if s.cfg.Stub != nil {
		var ok bool
		if ans, ok = s.stubAnswer(w, r, route, a); !ok {
			return
		}
	} else {
		resp := s.roundTrip(w, r, a)
		if resp == nil {
			return
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, s.cfg.MaxBody+1))
		resp.Body.Close()
		if err != nil || int64(len(body)) > s.cfg.MaxBody {
			a.Outcome, a.Status = OutcomeUpstreamError, http.StatusBadGateway
			failJSON(w, a.Status, "fault: upstream answer could not be read in full for truncation")
			return
		}
		removeHopHeaders(resp.Header)
		ans = answer{status: resp.StatusCode, header: resp.Header, body: body}
	}
	declared := max(len(ans.body), 1)
	copyHeader(w.Header(), ans.header)
	w.Header().Set("Content-Length", fmt.Sprint(declared))
	w.WriteHeader(ans.status)
	_, _ = w.Write(ans.body[:len(ans.body)/2])
	_ = http.NewResponseController(w).Flush()
	a.Outcome, a.Status = OutcomeTruncate, ans.status
	abort(w, false)
}
