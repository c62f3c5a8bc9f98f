// Package fault is a fault-injecting reverse proxy (and stub server) for any
// HTTP dependency. It applies pgsim's behaviour model per request: an error
// share with a chosen status and body, connection faults (reset, hang,
// truncated or malformed answers), latency distributions, slow mode and
// behaviour phases over time, scoped by method and path pattern. Rules are read
// per request, so a change reaches live keep-alive connections at once. It keeps
// an attempt log keyed by a correlation header (the W3C traceparent's trace-id
// by default) so attempts per logical request are counted like pgsim's, serves
// Prometheus metrics and a JSON control API under /__fault/.
//
// A Server embeds like pgsim.Server: New, Start (127.0.0.1 by default in the
// command), URL, Close, or Handler for an httptest server.
package fault

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cbprobe/cbprobe/pgsim"
	"github.com/cbprobe/cbprobe/pgsim/behavior"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Defaults of Config.
const (
	DefaultMaxBody     int64 = 10 << 20 // request and response bodies, bytes
	DefaultMaxKeys           = 100_000  // correlation keys tracked
	DefaultMaxAttempts       = 100_000  // attempts kept in memory
	DefaultMetricsPath       = "/metrics"
	// ControlPrefix is where the control API lives; fault answers it itself.
	ControlPrefix = "/__fault/"
)

// DefaultCorrelationHeaders are tried in order for an attempt's correlation key.
func DefaultCorrelationHeaders() []string { return []string{"traceparent", "X-Request-Id"} }

// Config configures a Server. Exactly one of Upstream and Stub is set.
type Config struct {
	// Upstream is the base URL requests are forwarded to (http or https); its
	// path, if any, is prefixed to every request path.
	Upstream string
	// Stub answers requests from route definitions instead of an upstream.
	Stub *Stub
	// Behavior applies to requests no rule matches; the zero value means
	// NoFaults(), and ErrorStatus 0 means 500 (so Behavior{Behavior: b} wraps a
	// pgsim behaviour b as it is).
	Behavior Behavior
	// Rules scope behaviours to methods and paths; the first match wins.
	Rules []Rule
	// Seed makes decisions reproducible (same seed, same request order, same
	// decisions); 0 picks a random seed.
	Seed int64
	// CorrelationHeaders are tried in order for each attempt's key (default
	// traceparent, then X-Request-Id).
	CorrelationHeaders []string
	// MaxBody caps request and response bodies in bytes (default 10 MiB).
	// Bodies are streamed; a longer request body is refused with 413, a longer
	// upstream answer is cut and logged as upstream-error.
	MaxBody int64
	// MaxKeys bounds the correlation keys tracked (default 100,000), oldest dropped.
	MaxKeys int
	// MaxAttempts bounds the attempts kept in memory (default 100,000), oldest
	// dropped; LogPath keeps every one.
	MaxAttempts int
	// LogPath, when set, appends every attempt as a JSON line to this file.
	LogPath string
	// MetricsPath is where Prometheus metrics are served (default /metrics);
	// requests to it are not forwarded. Move it when the upstream has its own.
	MetricsPath string
	// Transport forwards requests; nil means NewTransport().
	Transport http.RoundTripper
	// Now is the clock of behaviour phases (request timing always uses the real clock); nil means time.Now.
	Now func() time.Time
}

// NewTransport returns the transport fault forwards with: no environment
// proxy, 5 s dial timeout, up to 1024 idle keep-alive connections per host,
// compression passed through untouched, HTTP/1.1.
func NewTransport() *http.Transport {
	return &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   1024,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
	}
}

// ConfigError is an invalid Config; ExitCode is 2.
type ConfigError struct{ Err error }

// Error returns the message.
func (e *ConfigError) Error() string { return "fault config: " + e.Err.Error() }

// Unwrap returns the cause.
func (e *ConfigError) Unwrap() error { return e.Err }

// ExitCode returns 2.
func (e *ConfigError) ExitCode() int { return 2 }

// ruleState is one installed rule set; replaced whole, read per request.
type ruleState struct {
	since time.Time
	def   Behavior
	rules []Rule
	names []string // labels of rules, then RouteDefault last
}

// match returns the route label and behaviour in effect for a request.
func (st *ruleState) match(method, p string, now time.Time) (string, Behavior) {
	for i := range st.rules {
		if st.rules[i].Matches(method, p) {
			return st.names[i], st.rules[i].At(now.Sub(st.since))
		}
	}
	return RouteDefault, st.def
}

// Server is a fault proxy or stub.
type Server struct {
	cfg       Config
	logger    *slog.Logger
	seed      int64
	upstream  *url.URL
	transport http.RoundTripper
	now       func() time.Time

	state    atomic.Pointer[ruleState]
	stateMu  sync.Mutex // serialises writers of state
	decideMu sync.Mutex
	rng      *rand.Rand

	log      *attemptLog
	logFile  *os.File
	metrics  *metrics
	promH    http.Handler
	inFlight atomic.Int64
	seq      atomic.Uint64
	started  time.Time
	bufs     sync.Pool

	httpSrv  *http.Server
	listener net.Listener
	cut      chan struct{}
	cutOnce  sync.Once
	closed   atomic.Bool
	closeMu  sync.Mutex
}

func (c Config) withDefaults() Config {
	if c.Behavior.ErrorStatus == 0 && c.Behavior.Latency == nil && c.Behavior.SlowLatency == nil {
		c.Behavior = NoFaults()
	}
	if c.Behavior.ErrorStatus == 0 { // a pgsim behaviour wrapped as it is
		c.Behavior.ErrorStatus = DefaultErrorStatus
	}
	if len(c.CorrelationHeaders) == 0 {
		c.CorrelationHeaders = DefaultCorrelationHeaders()
	}
	if c.MaxBody == 0 {
		c.MaxBody = DefaultMaxBody
	}
	if c.MaxKeys == 0 {
		c.MaxKeys = DefaultMaxKeys
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.MetricsPath == "" {
		c.MetricsPath = DefaultMetricsPath
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// ParseUpstream checks an upstream base URL: http or https, a host, no query
// or fragment.
func ParseUpstream(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, fmt.Errorf("upstream %q: %v", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("upstream %q: want an http:// or https:// URL", raw)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("upstream %q: no host", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("upstream %q: want a base URL without query, fragment or user info", raw)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// Validate checks the config after defaults are applied.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Upstream == "" && c.Stub == nil:
		return &ConfigError{errors.New("give an upstream URL or a stub route file")}
	case c.Upstream != "" && c.Stub != nil:
		return &ConfigError{errors.New("give an upstream URL or a stub route file, not both")}
	}
	if c.Upstream != "" {
		if _, err := ParseUpstream(c.Upstream); err != nil {
			return &ConfigError{err}
		}
	}
	if err := c.Behavior.Validate(); err != nil {
		return &ConfigError{prefixField("behavior", err)}
	}
	if len(c.Rules) > MaxRules {
		return &ConfigError{fmt.Errorf("%d rules; at most %d", len(c.Rules), MaxRules)}
	}
	for i, r := range c.Rules {
		if err := r.Validate(); err != nil {
			return &ConfigError{prefixField(fmt.Sprintf("rules[%d]", i), err)}
		}
	}
	for _, h := range c.CorrelationHeaders {
		if !validHeaderName(h) {
			return &ConfigError{fmt.Errorf("correlation header %q is not a valid header name", h)}
		}
	}
	switch {
	case c.MaxBody < 0:
		return &ConfigError{fmt.Errorf("max body %d: want > 0", c.MaxBody)}
	case c.MaxKeys < 0:
		return &ConfigError{fmt.Errorf("max keys %d: want >= 1", c.MaxKeys)}
	case c.MaxAttempts < 0:
		return &ConfigError{fmt.Errorf("max attempts %d: want >= 1", c.MaxAttempts)}
	case !strings.HasPrefix(c.MetricsPath, "/") || strings.HasPrefix(c.MetricsPath, ControlPrefix) && c.MetricsPath != ControlPrefix+"metrics":
		return &ConfigError{fmt.Errorf("metrics path %q: want an absolute path outside %s (or %smetrics)", c.MetricsPath, ControlPrefix, ControlPrefix)}
	}
	return nil
}

// New builds a server from cfg (defaults applied, then validated); it opens
// the attempt log file when cfg.LogPath is set. logger may be nil.
func New(cfg Config, logger *slog.Logger) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = rand.Int64N(math.MaxInt64-1) + 1
	}
	s := &Server{
		cfg: cfg, logger: logger, seed: seed, now: cfg.Now,
		rng:     behavior.NewRand(seed),
		metrics: newMetrics(),
		started: cfg.Now(),
		cut:     make(chan struct{}),
	}
	if cfg.Upstream != "" {
		s.upstream, _ = ParseUpstream(cfg.Upstream)
	}
	s.transport = cfg.Transport
	if s.transport == nil {
		s.transport = NewTransport()
	}
	var w *os.File
	if cfg.LogPath != "" {
		f, err := os.OpenFile(cfg.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, &ConfigError{fmt.Errorf("open attempt log: %w", err)}
		}
		w, s.logFile = f, f
	}
	if w != nil {
		s.log = newAttemptLog(cfg.MaxKeys, cfg.MaxAttempts, w)
	} else {
		s.log = newAttemptLog(cfg.MaxKeys, cfg.MaxAttempts, nil)
	}
	s.promH = promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{})
	s.install(cfg.Behavior, cfg.Rules, true)
	return s, nil
}

// install makes a new rule state current; resetClock restarts the phases.
func (s *Server) install(def Behavior, rules []Rule, resetClock bool) {
	s.stateMu.Lock()
	defer s.stateMu.Unlock()
	st := &ruleState{def: def, rules: rules, since: s.now()}
	if old := s.state.Load(); old != nil && !resetClock {
		st.since = old.since
	}
	for _, r := range rules {
		st.names = append(st.names, r.label())
	}
	st.names = append(st.names, RouteDefault)
	s.state.Store(st)
	s.metrics.setBehavior(def)
}

// Seed returns the seed in use.
func (s *Server) Seed() int64 { return s.seed }

// Config returns the configuration in effect (defaults applied).
func (s *Server) Config() Config { return s.cfg }

// Handler returns the HTTP handler: the proxy (or stub), the metrics path and /__fault/.
func (s *Server) Handler() http.Handler { return s }

// Behavior returns the default behaviour (requests no rule matches).
func (s *Server) Behavior() Behavior { return s.state.Load().def }

// SetBehavior validates b and makes it the default behaviour of every later
// request, on every connection; the rules and their phase clock stay.
func (s *Server) SetBehavior(b Behavior) error {
	if err := b.Validate(); err != nil {
		return err
	}
	s.install(b, s.state.Load().rules, false)
	return nil
}

// Rules returns the installed rules.
func (s *Server) Rules() []Rule { return s.state.Load().rules }

// SetRules validates rules and installs them for every later request; their
// phases start now.
func (s *Server) SetRules(rules []Rule) error {
	if len(rules) > MaxRules {
		return &FieldError{Field: "rules", Msg: fmt.Sprintf("%d rules; at most %d", len(rules), MaxRules)}
	}
	for i, r := range rules {
		if err := r.Validate(); err != nil {
			return prefixField(fmt.Sprintf("rules[%d]", i), err)
		}
	}
	s.install(s.state.Load().def, rules, true)
	return nil
}

// Attempts returns a copy of the in-memory attempt log, oldest first.
func (s *Server) Attempts() []Attempt { return s.log.Attempts() }

// AttemptStats summarises the attempt log.
func (s *Server) AttemptStats() AttemptStats { return s.log.Stats() }

// ResetStats clears the attempt log (the file log keeps its lines; metrics stay).
func (s *Server) ResetStats() { s.log.Reset() }

// Start listens on addr ("127.0.0.1:0" picks a free port) and serves in the
// background; it returns once the listener is open. Stop with Close.
func (s *Server) Start(ctx context.Context, addr string) error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed.Load() {
		return errors.New("fault: start: server is closed")
	}
	if s.httpSrv != nil {
		return errors.New("fault: start: already started")
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("fault: listen on %s: %w", addr, err)
	}
	if !pgsim.IsLoopback(ln.Addr()) {
		s.logger.Warn("fault listens on a non-loopback address: anyone who can reach it can use it", "addr", ln.Addr().String())
	}
	// The same client bounds as pgsim and the demo (docs/limits.md): header,
	// request and idle timeouts and a connection cap. No write timeout, so
	// injected latency and hangs are not cut by the server.
	s.listener, s.httpSrv = pgsim.ServerLimits{}.Serve(ln, s, s.logger, "fault")
	s.logger.Info("fault listening", "addr", s.listener.Addr().String())
	return nil
}

// URL returns the base URL, "http://HOST:PORT"; "" before Start.
func (s *Server) URL() string {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.listener == nil {
		return ""
	}
	return "http://" + s.listener.Addr().String()
}

// Close stops the server: no new connections; in-flight requests run until
// ctx's deadline, then their delays are cut; the attempt log file is flushed
// and closed. Safe to call more than once.
func (s *Server) Close(ctx context.Context) error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed.Swap(true) {
		return nil
	}
	var errs []error
	if s.httpSrv != nil {
		if err := s.httpSrv.Shutdown(ctx); err != nil {
			s.cutOnce.Do(func() { close(s.cut) })
			if cerr := s.httpSrv.Close(); cerr != nil {
				errs = append(errs, fmt.Errorf("fault: close listener: %w", cerr))
			}
		}
	}
	s.cutOnce.Do(func() { close(s.cut) })
	if t, ok := s.transport.(interface{ CloseIdleConnections() }); ok {
		t.CloseIdleConnections()
	}
	if err := s.log.Flush(); err != nil {
		errs = append(errs, err)
	}
	if s.logFile != nil {
		if err := s.logFile.Close(); err != nil {
			errs = append(errs, fmt.Errorf("fault: close attempt log: %w", err))
		}
	}
	return errors.Join(errs...)
}

// metrics holds fault's collectors on a private registry.
type metrics struct {
	reg       *prometheus.Registry
	requests  *prometheus.CounterVec
	injected  prometheus.Histogram
	upstream  prometheus.Histogram
	inFlight  prometheus.Gauge
	behaviour *prometheus.GaugeVec
	cache     sync.Map // [2]string{route, outcome} -> prometheus.Counter
}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fault_requests_total",
		Help: "Requests fault answered (or cut), by route (rule name or default) and outcome.",
	}, []string{"route", "outcome"})
	buckets := []float64{0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.8, 1, 2, 5, 10, 30}
	m.injected = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "fault_injected_latency_seconds", Help: "Latency fault added on purpose, in seconds.", Buckets: buckets,
	})
	m.upstream = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "fault_upstream_seconds", Help: "Time from forwarding a request to the upstream's response headers, in seconds.", Buckets: buckets,
	})
	m.inFlight = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "fault_in_flight_requests", Help: "Requests being served right now.",
	})
	m.behaviour = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "fault_behavior",
		Help: "Default behaviour: error_rate, hang_rate, reset_rate, truncate_rate, malformed_rate (probabilities) and slow (0 or 1).",
	}, []string{"setting"})
	m.reg.MustRegister(m.requests, m.injected, m.upstream, m.inFlight, m.behaviour)
	return m
}

func (m *metrics) request(route, outcome string) {
	k := [2]string{route, outcome}
	if c, ok := m.cache.Load(k); ok {
		c.(prometheus.Counter).Inc()
		return
	}
	c := m.requests.WithLabelValues(route, outcome)
	m.cache.Store(k, c)
	c.Inc()
}

func (m *metrics) setBehavior(b Behavior) {
	slow := 0.0
	if b.Slow {
		slow = 1
	}
	m.behaviour.WithLabelValues("error_rate").Set(b.ErrorRate)
	m.behaviour.WithLabelValues("hang_rate").Set(b.HangRate)
	m.behaviour.WithLabelValues("reset_rate").Set(b.ResetRate)
	m.behaviour.WithLabelValues("truncate_rate").Set(b.TruncateRate)
	m.behaviour.WithLabelValues("malformed_rate").Set(b.MalformedRate)
	m.behaviour.WithLabelValues("slow").Set(slow)
}
