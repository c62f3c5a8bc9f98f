// Package demo is the reference target service: a Spring Boot 3 commerce
// service with resilience4j-spring-boot3, Spring Cloud OpenFeign and
// micrometer-registry-prometheus, emulated in Go. It creates orders, pays them
// through the payment gateway behind Retry(CircuitBreaker(TimeLimiter(call)))
// and exposes the same actuator JSON and Prometheus text as the Spring service.
package demo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cbprobe/cbprobe/breaker"
	"github.com/cbprobe/cbprobe/pgsim"
	"github.com/cbprobe/cbprobe/springconf"
)

// DefaultDBLatency is the simulated database work per transaction.
const DefaultDBLatency = springconf.DefaultDBLatency

// NoDBLatency, as Config.DBLatency, turns the simulated database work off.
const NoDBLatency = time.Duration(-1)

// Config configures a Service. The zero value runs the embedded reference
// configuration against an embedded gateway in real time.
type Config struct {
	// Spring is a parsed application.yml; it wins over ConfigPath. Nil and an
	// empty ConfigPath mean springconf.ReferenceYAML().
	Spring *springconf.File
	// ConfigPath is an application.yml/.yaml/.properties file to load.
	ConfigPath string
	// PGBaseURL is the gateway's base URL ("http://127.0.0.1:8082"); empty means
	// the file's pg.base-url, and without it an embedded pgsim started by Start.
	PGBaseURL string
	// Orders is the order store (the service's database); replicas of one
	// service behind a load balancer share one. Nil: a store of its own.
	Orders *OrderStore
	// EmbeddedGateway starts the embedded pgsim even when the file sets
	// pg.base-url (a user's application.yml usually names its real gateway).
	EmbeddedGateway bool
	// Gateway configures the embedded pgsim. Its Speed and CallbackPrefix are set
	// by the service; a zero Seed takes Config.Seed; a zero Behavior means
	// behavior.DefaultBehavior().
	Gateway pgsim.Config
	// Seed seeds the retry's randomised waits and the embedded gateway (0: random).
	Seed int64
	// Speed runs every timed thing Speed times faster (0 means 1): gateway
	// latencies, database work, TimeLimiter and retry waits, the breaker's
	// durations and TIME_BASED seconds. Durations are measured on the same scaled
	// clock, so a call that took 20 ms at speed 10 counts as 200 ms.
	Speed float64
	// PromFormat selects the /actuator/prometheus text generation.
	PromFormat PromFormat
	// Boot4 answers the actuator as Spring Boot 4 does (Jackson 3): a state
	// transition event's stateTransition is the enum's toString() ("State
	// transition from CLOSED to OPEN") and health has the liveness and readiness
	// probes and their groups.
	Boot4 bool
	// DBLatency is the simulated database work per transaction (in service
	// time); 0 means demo.db-latency from the file or DefaultDBLatency, NoDBLatency none.
	DBLatency time.Duration
	// DBPoolSize is the number of concurrent transactions (HikariCP's pool); 0
	// means spring.datasource.hikari.maximum-pool-size or 10.
	DBPoolSize int
	// Zone is the JVM default zone of event creation times ("" = Etc/UTC; e.g.
	// "Asia/Seoul" or "+09:00"); demo.time-zone in the file is used when empty.
	Zone string
	// CallbackURL is the callbackUrl sent to the gateway; empty means
	// pg.callback-url, else http://localhost:<port>/api/v1/payments/callback.
	CallbackURL string
	// RetryOnRejection overrides pg.retry-on-rejection (default false: a
	// rejection by the open breaker is not retried).
	RetryOnRejection *bool
	// CommonTags are Micrometer common tags added to every meter; nil means
	// management.metrics.tags.application from the file, if set.
	CommonTags map[string]string
	// Limits bounds client connections (timeouts, simultaneous connections);
	// zero fields take pgsim's defaults (docs/limits.md).
	Limits pgsim.ServerLimits
	// HTTPClient calls the gateway; nil means a pooled client without timeout
	// (the TimeLimiter bounds each call).
	HTTPClient *http.Client
}

// Service is a running (or ready to run) demo service.
type Service struct {
	cfg        Config
	logger     *slog.Logger
	file       *springconf.File
	clock      breaker.Clock
	speed      float64
	zone       Zone
	reg        *registry
	mgmt       springconf.Management
	health     HealthOptions
	dbLatency  time.Duration
	db         chan struct{}
	client     *http.Client
	retryAdj   func(*breaker.RetryConfig)
	settings   Settings
	orders     *OrderStore
	promFormat PromFormat
	tags       map[string]string

	mu          sync.Mutex
	pgURL       string
	callbackURL string
	gateway     *pgsim.Server
	srv         *http.Server
	ln          net.Listener
	url         string
	flowOnce    sync.Once
	flowCall    func(context.Context, func(context.Context) error) error
	flowErr     error
	// pool is Spring Cloud's thread-pool bulkhead around the payment call (nil when disabled).
	pool       *threadPool
	baseCtx    context.Context
	cancelBase context.CancelFunc
	serveDone  chan struct{}

	connMu  sync.Mutex
	closing bool
	fresh   map[net.Conn]bool // accepted connections that have not sent a request yet
}

// New checks the configuration and builds the service; it listens only after
// Start. Configuration errors carry the key path and ExitCode() 2.
func New(cfg Config, logger *slog.Logger) (*Service, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	f := cfg.Spring
	if f == nil {
		var err error
		if f, err = springconf.LoadOrReference(cfg.ConfigPath); err != nil {
			return nil, err
		}
	}
	speed := cfg.Speed
	if speed == 0 {
		speed = 1
	}
	if !(speed > 0 && speed <= 1e6) { // NaN fails too
		return nil, &settingError{fmt.Errorf("speed %v: want a factor in (0, 1e6]", speed)}
	}
	s := &Service{cfg: cfg, logger: logger, file: f, speed: speed, promFormat: cfg.PromFormat, orders: cmp.Or(cfg.Orders, NewOrderStore())}
	s.clock = breaker.SystemClock()
	if speed != 1 {
		s.clock = breaker.NewScaledClock(speed)
	}
	var err error
	zoneID := cfg.Zone
	if zoneID == "" {
		zoneID, _ = f.Get("demo.time-zone")
	}
	if s.zone, err = ParseZone(zoneID); err != nil {
		return nil, err
	}
	s.tags = cfg.CommonTags
	if s.tags == nil {
		if v, ok := f.Get("management.metrics.tags.application"); ok {
			s.tags = map[string]string{"application": resolvePlaceholder(f, v)}
		}
	}
	s.mgmt = f.Management()
	s.health = healthOptions(f, s.mgmt)
	s.health.Boot4 = cfg.Boot4
	if err := s.readPG(); err != nil {
		return nil, err
	}
	s.reg = newRegistry(f, s.clock, uint64(cfg.Seed), logger)
	if err := s.reg.createEager(); err != nil {
		return nil, err
	}
	s.client = cfg.HTTPClient
	if s.client == nil {
		s.client = &http.Client{Transport: &http.Transport{
			Proxy:               nil,
			MaxIdleConns:        1024,
			MaxIdleConnsPerHost: 1024,
			IdleConnTimeout:     90 * time.Second,
		}}
	}
	s.baseCtx, s.cancelBase = context.WithCancel(context.Background())
	return s, nil
}

// readPG reads the pg.* and demo.* keys.
func (s *Service) readPG() error {
	f := s.file
	cfgErr := func(key, msg string) error { return &springconf.Error{File: f.Name(), Key: key, Msg: msg} }
	s.pgURL = s.cfg.PGBaseURL
	if s.pgURL == "" && !s.cfg.EmbeddedGateway {
		s.pgURL, _ = f.Get("pg.base-url")
	}
	if s.pgURL != "" && !strings.HasPrefix(s.pgURL, "http://") && !strings.HasPrefix(s.pgURL, "https://") {
		return cfgErr("pg.base-url", fmt.Sprintf("%q is not an http:// or https:// URL", s.pgURL))
	}
	s.callbackURL = s.cfg.CallbackURL
	if s.callbackURL == "" {
		s.callbackURL, _ = f.Get("pg.callback-url")
	}
	set, err := ResolveSettings(f)
	if err != nil {
		return err
	}
	s.settings = set
	if o := s.cfg.RetryOnRejection; o != nil {
		s.settings.RetryOnRejection = *o
	}
	rc := serviceRetry(set.Retry, s.settings.RetryOnRejection)
	s.retryAdj = func(c *breaker.RetryConfig) { *c = rc }
	s.dbLatency = s.cfg.DBLatency
	if s.dbLatency == 0 {
		s.dbLatency = set.DBLatency
	}
	if s.dbLatency < 0 {
		s.dbLatency = 0
	}
	pool := s.cfg.DBPoolSize
	if pool == 0 {
		pool = 10
		if v, ok := f.Get("spring.datasource.hikari.maximum-pool-size"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 1 {
				return cfgErr("spring.datasource.hikari.maximum-pool-size", fmt.Sprintf("%q is not a whole number >= 1", v))
			}
			pool = n
		}
	}
	if pool < 1 {
		return fmt.Errorf("database pool size %d: want at least 1", pool)
	}
	s.db = make(chan struct{}, pool)
	return nil
}

func healthOptions(f *springconf.File, m springconf.Management) HealthOptions {
	o := HealthOptions{BreakersEnabled: m.HealthCircuitBreakersEnabled, ShowDetails: strings.EqualFold(m.ShowDetails, "always")}
	o.ShowComponents = o.ShowDetails
	if v, ok := f.Get("management.endpoint.health.show-components"); ok {
		o.ShowComponents = strings.EqualFold(strings.TrimSpace(v), "always")
	}
	if v, ok := f.Get("management.endpoint.health.status.order"); ok {
		for _, p := range strings.Split(v, ",") {
			if p = strings.ToUpper(strings.TrimSpace(p)); p != "" {
				o.Order = append(o.Order, p)
			}
		}
	}
	return o
}

// Start listens on addr ("127.0.0.1:0" picks a free port), starts the embedded
// gateway when no gateway URL is configured, and serves until Close.
func (s *Service) Start(ctx context.Context, addr string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return errors.New("demo service already started")
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	s.url = "http://" + ln.Addr().String()
	if s.callbackURL == "" {
		s.callbackURL = fmt.Sprintf("http://localhost:%d/api/v1/payments/callback", port)
	}
	if s.pgURL == "" {
		gcfg := s.cfg.Gateway
		gcfg.Speed = s.speed
		if gcfg.Seed == 0 {
			gcfg.Seed = s.cfg.Seed
		}
		gcfg.CallbackPrefix = fmt.Sprintf("http://localhost:%d", port)
		gw, err := pgsim.New(gcfg, s.logger.With("component", "pgsim"))
		if err != nil {
			ln.Close()
			return fmt.Errorf("embedded gateway: %w", err)
		}
		if err := gw.Start(ctx, "127.0.0.1:0"); err != nil {
			ln.Close()
			return fmt.Errorf("start embedded gateway: %w", err)
		}
		s.gateway = gw
		s.pgURL = gw.URL()
	}
	s.fresh = map[net.Conn]bool{}
	if !pgsim.IsLoopback(ln.Addr()) {
		s.logger.Warn("demo service listens on a non-loopback address: anyone who can reach it can use it", "addr", ln.Addr().String())
	}
	ln = s.cfg.Limits.Listener(ln)
	s.ln = ln
	s.srv = s.cfg.Limits.Server(limitBody(s.Handler(), s.springError), s.logger)
	s.srv.BaseContext = func(net.Listener) context.Context { return s.baseCtx }
	s.srv.ConnState = s.trackConn
	s.serveDone = make(chan struct{})
	go func() {
		defer close(s.serveDone)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.logger.Error("demo service stopped", "err", err)
		}
	}()
	s.logger.Info("demo service listening", "url", s.url, "gateway", s.pgURL)
	return nil
}

// URL returns the service's base URL, "http://127.0.0.1:PORT" (empty before Start).
func (s *Service) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

// GatewayURL returns the base URL of the gateway the service calls (known
// after Start when the gateway is embedded).
func (s *Service) GatewayURL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pgURL
}

// Gateway returns the embedded gateway, nil when the service calls an external one.
func (s *Service) Gateway() *pgsim.Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gateway
}

// Clock returns the clock the breaker, limiter and retry run on.
func (s *Service) Clock() breaker.Clock { return s.clock }

// Settings returns the payment call's resolved settings (breaker, time
// limiter, retry with the pg.* keys applied, database latency).
func (s *Service) Settings() Settings { return s.settings }

// Speed returns the speed factor.
func (s *Service) Speed() float64 { return s.speed }

// Breaker returns the payment call's circuit breaker (named FeignName),
// creating it as the first payment would.
func (s *Service) Breaker() (*breaker.CircuitBreaker, error) {
	e, err := s.reg.breaker(FeignName)
	if err != nil {
		return nil, err
	}
	return e.cb, nil
}

// BreakerNamed returns a breaker of the registry, or nil.
func (s *Service) BreakerNamed(name string) *breaker.CircuitBreaker {
	if e := s.reg.lookupBreaker(name); e != nil {
		return e.cb
	}
	return nil
}

// AddBreaker creates (or returns) the breaker called name with the
// configuration Spring's registry would give it, as POST
// /actuator/circuitbreakers/{name} does.
func (s *Service) AddBreaker(name string) (*breaker.CircuitBreaker, error) {
	e, err := s.reg.breaker(name)
	if err != nil {
		return nil, err
	}
	return e.cb, nil
}

// Close stops serving (gracefully until ctx ends), drops the idle connections
// to the gateway (a server waits 5 s for a connection that never sent a
// request) and stops the embedded gateway.
func (s *Service) Close(ctx context.Context) error {
	s.mu.Lock()
	srv, gw, done := s.srv, s.gateway, s.serveDone
	s.mu.Unlock()
	var errs []error
	if srv != nil {
		s.closeFreshConns()
		if err := srv.Shutdown(ctx); err != nil {
			s.cancelBase()
			srv.Close()
			errs = append(errs, fmt.Errorf("shut down demo service: %w", err))
		}
		<-done
	}
	s.cancelBase()
	s.client.CloseIdleConnections()
	if gw != nil {
		if err := gw.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("close embedded gateway: %w", err))
		}
	}
	return errors.Join(errs...)
}

// settingError is a bad Config value: exit code 2.
type settingError struct{ err error }

func (e *settingError) Error() string { return e.err.Error() }

// Unwrap returns the cause.
func (e *settingError) Unwrap() error { return e.err }

// ExitCode is 2: a usage or configuration error.
func (e *settingError) ExitCode() int { return 2 }

// trackConn remembers connections that have not sent a request yet: Shutdown
// would wait 5 s for them, so Close closes them at once.
func (s *Service) trackConn(c net.Conn, st http.ConnState) {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	switch st {
	case http.StateNew:
		if s.closing {
			c.Close()
			return
		}
		s.fresh[c] = true
	default:
		delete(s.fresh, c)
	}
}

func (s *Service) closeFreshConns() {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	s.closing = true
	for c := range s.fresh {
		c.Close()
		delete(s.fresh, c)
	}
}

// resolvePlaceholder resolves a whole-value ${key} or ${key:default} placeholder
// (as in application: ${spring.application.name}); other values are kept.
func resolvePlaceholder(f *springconf.File, v string) string {
	v = strings.TrimSpace(v)
	if !strings.HasPrefix(v, "${") || !strings.HasSuffix(v, "}") {
		return v
	}
	key, def, _ := strings.Cut(v[2:len(v)-1], ":")
	if got, ok := f.Get(key); ok {
		return got
	}
	return def
}
