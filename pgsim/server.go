// Package pgsim is a drop-in simulator of the Loopers pg-simulator payment
// gateway: the same three endpoints, envelope, Korean messages and validation
// order, asynchronous settlement with callbacks, plus configurable faults
// (error share, latency distributions, slow mode, hangs, connection resets), an
// attempt log that counts attempts per orderId, Prometheus metrics and a small
// JSON control API under /__pgsim/. The outcome model lives in pgsim/behavior.
package pgsim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cbprobe/cbprobe/pgsim/behavior"
)

// Defaults of Config.
const (
	DefaultCallbackPrefix  = "http://localhost:8080" // what every callbackUrl must start with
	DefaultCallbackWorkers = 64                      // most callback goroutines (started on demand)
	DefaultMaxOrders       = 1_000_000               // orderIds tracked for attempt statistics
	DefaultMaxAttempts     = 1_000_000               // attempts kept in memory
	DefaultCallbackTimeout = 5 * time.Second         // bound on one callback POST
	DefaultCallbackQueue   = 100_000                 // callbacks waiting for a worker
)

// Config configures a Server. The zero value of every field means its default.
type Config struct {
	// Behavior is the initial behaviour; a zero Behavior means behavior.DefaultBehavior().
	Behavior behavior.Behavior
	// Seed makes outcomes and latencies reproducible: the same seed and the same
	// order of requests give the same decisions. 0 picks a random seed.
	Seed int64
	// CallbackPrefix is the prefix every callbackUrl must start with
	// (default "http://localhost:8080", as the original).
	CallbackPrefix string
	// CallbackWorkers is the most goroutines posting settlement callbacks at
	// once (default 64). Workers start when a callback finds none free, so the
	// number running is about the callback rate (per second) times the
	// receiver's answer time (seconds), and each keeps one keep-alive
	// connection. 64 workers post on time up to 64/latency callbacks per second
	// (6,400/s for a receiver answering in 10 ms); a fast loopback receiver is
	// bounded by CPU first (docs/PERFORMANCE.md states the rate measured).
	CallbackWorkers int
	// CallbackQueue bounds the callbacks waiting for a worker (default 100,000);
	// beyond it callbacks are dropped, counted (pgsim_callbacks_dropped_total,
	// Stats.CallbacksDropped, also in the failed count) and a warning is logged
	// once per overflow.
	CallbackQueue int
	// CallbackTimeout bounds one callback POST (default 5 s; the original has none).
	CallbackTimeout time.Duration
	// MaxOrders bounds the orderIds tracked for attempt statistics (default 1,000,000);
	// the oldest are dropped and counted.
	MaxOrders int
	// MaxAttempts bounds the attempts kept in memory (default 1,000,000); the
	// oldest are dropped and counted. The file log (LogPath) keeps every one.
	MaxAttempts int
	// LogPath, when set, appends every attempt as a JSON line to this file.
	LogPath string
	// Speed > 1 divides every injected latency and the settlement delay
	// (1 = real time, the default).
	Speed float64
	// MaxLogBytes is the byte budget of the in-memory attempt log (default
	// DefaultMaxLogBytes): LogCaps lowers MaxOrders and MaxAttempts to fit it.
	MaxLogBytes int
	// MaxStoreBytes is the byte budget of the transaction store (default
	// DefaultMaxStoreBytes); the oldest transactions are forgotten beyond it.
	MaxStoreBytes int
	// Limits bounds client connections: timeouts and simultaneous connections.
	Limits ServerLimits
	// ControlToken, when set, must be sent in the X-Pgsim-Token header of every
	// /__pgsim/ request. Without it the control API answers only while the
	// server listens on a loopback address.
	ControlToken string
}

// DefaultConfig returns the defaults: the field report's gateway, a random
// seed, up to 64 callback workers, http://localhost:8080 as callback prefix.
func DefaultConfig() Config {
	return Config{
		Behavior:        behavior.DefaultBehavior(),
		CallbackPrefix:  DefaultCallbackPrefix,
		CallbackWorkers: DefaultCallbackWorkers,
		CallbackQueue:   DefaultCallbackQueue,
		CallbackTimeout: DefaultCallbackTimeout,
		MaxOrders:       DefaultMaxOrders,
		MaxAttempts:     DefaultMaxAttempts,
		Speed:           1,
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if isZeroBehavior(c.Behavior) {
		c.Behavior = d.Behavior
	}
	if c.CallbackPrefix == "" {
		c.CallbackPrefix = d.CallbackPrefix
	}
	if c.CallbackWorkers == 0 {
		c.CallbackWorkers = d.CallbackWorkers
	}
	if c.CallbackQueue == 0 {
		c.CallbackQueue = d.CallbackQueue
	}
	if c.CallbackTimeout == 0 {
		c.CallbackTimeout = d.CallbackTimeout
	}
	if c.MaxOrders == 0 {
		c.MaxOrders = d.MaxOrders
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = d.MaxAttempts
	}
	if c.Speed == 0 {
		c.Speed = 1
	}
	if c.MaxLogBytes == 0 {
		c.MaxLogBytes = DefaultMaxLogBytes
	}
	if c.MaxStoreBytes == 0 {
		c.MaxStoreBytes = DefaultMaxStoreBytes
	}
	c.Limits = c.Limits.WithDefaults()
	return c
}

func isZeroBehavior(b behavior.Behavior) bool {
	return b.ErrorRate == 0 && b.Latency == nil && b.ErrorTiming == 0 && !b.Slow && b.SlowLatency == nil &&
		b.HangRate == 0 && b.HangMax == 0 && b.ResetRate == 0
}

// ConfigError is an invalid Config; ExitCode is 2 (usage/configuration).
type ConfigError struct {
	Err error // what is wrong with the Config
}

// Error returns the wrapped message.
func (e *ConfigError) Error() string { return "pgsim config: " + e.Err.Error() }

// Unwrap returns the cause.
func (e *ConfigError) Unwrap() error { return e.Err }

// ExitCode returns 2.
func (e *ConfigError) ExitCode() int { return 2 }

// Validate checks the config after defaults are applied.
func (c Config) Validate() error {
	c = c.withDefaults()
	if err := c.Behavior.Validate(); err != nil {
		return &ConfigError{err}
	}
	switch {
	case math.IsNaN(c.Speed) || math.IsInf(c.Speed, 0) || c.Speed < 0:
		return &ConfigError{fmt.Errorf("speed %v: want a number > 0", c.Speed)}
	case c.CallbackWorkers < 0 || c.CallbackWorkers > MaxCallbackWorkers:
		return &ConfigError{fmt.Errorf("callback workers %d: want 1 to %d", c.CallbackWorkers, MaxCallbackWorkers)}
	case c.CallbackQueue < 0 || c.CallbackQueue > MaxCallbackQueue:
		return &ConfigError{fmt.Errorf("callback queue %d: want 1 to %d", c.CallbackQueue, MaxCallbackQueue)}
	case c.MaxOrders > MaxTrackedEntries || c.MaxAttempts > MaxTrackedEntries:
		return &ConfigError{fmt.Errorf("max orders %d, max attempts %d: want at most %d each", c.MaxOrders, c.MaxAttempts, MaxTrackedEntries)}
	case c.MaxLogBytes < 0 || c.MaxStoreBytes < 0:
		return &ConfigError{fmt.Errorf("max log bytes %d, max store bytes %d: want > 0", c.MaxLogBytes, c.MaxStoreBytes)}
	case c.CallbackTimeout < 0:
		return &ConfigError{fmt.Errorf("callback timeout %v: want > 0", c.CallbackTimeout)}
	case c.MaxOrders < 0:
		return &ConfigError{fmt.Errorf("max orders %d: want >= 1", c.MaxOrders)}
	case c.MaxAttempts < 0:
		return &ConfigError{fmt.Errorf("max attempts %d: want >= 1", c.MaxAttempts)}
	}
	if err := c.Limits.Validate(); err != nil {
		return &ConfigError{err}
	}
	return nil
}

// Server is a running (or startable) gateway simulator.
type Server struct {
	cfg     Config
	logger  *slog.Logger
	seed    int64
	handler http.Handler

	decideMu sync.Mutex // guards rng, behav and the order of attempt records
	rng      *rand.Rand
	behav    behavior.Behavior

	settleMu  sync.Mutex
	settleRng *rand.Rand

	log      *attemptLog
	logFile  *os.File
	store    *store
	metrics  *metrics
	requests *requestCounters
	inFlight atomic.Int64
	started  time.Time

	callbacks *callbackPool
	bufs      bufPool

	httpSrv  *http.Server
	listener net.Listener
	cut      chan struct{} // closed when in-flight delays must end now
	cutOnce  sync.Once
	closed   atomic.Bool
	closeMu  sync.Mutex
	exposed  atomic.Bool // listening on a non-loopback address

	refusalsMu sync.Mutex
	refusals   map[string]bool // kinds of refused payments already logged
}

// New builds a server from cfg (defaults applied, then validated). It opens
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
		cfg:       cfg,
		logger:    logger,
		seed:      seed,
		rng:       behavior.NewRand(seed),
		settleRng: rand.New(rand.NewPCG(uint64(seed), 0x5eed_0002)),
		behav:     cfg.Behavior,
		metrics:   newMetrics(),
		requests:  newRequestCounters(),
		started:   time.Now(),
		cut:       make(chan struct{}),
	}
	s.store = newStore(newKeyGen(rand.New(rand.NewPCG(uint64(seed), 0x5eed_0003)).Uint64()), cfg.MaxStoreBytes)
	var logW *os.File
	if cfg.LogPath != "" {
		f, err := os.OpenFile(cfg.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, &ConfigError{fmt.Errorf("open attempt log: %w", err)}
		}
		logW, s.logFile = f, f
	}
	maxOrders, maxAttempts := cfg.LogCaps()
	if logW != nil {
		s.log = newAttemptLog(maxOrders, maxAttempts, logW)
	} else {
		s.log = newAttemptLog(maxOrders, maxAttempts, nil)
	}
	s.callbacks = newCallbackPool(cfg.CallbackWorkers, cfg.CallbackQueue, cfg.CallbackTimeout, s.metrics, logger)
	s.setBehaviorMetrics(cfg.Behavior)
	s.handler = s.routes()
	return s, nil
}

// Seed returns the seed in use (the one drawn at random when Config.Seed was 0).
func (s *Server) Seed() int64 { return s.seed }

// Config returns the configuration in effect (defaults applied).
func (s *Server) Config() Config { return s.cfg }

// Handler returns the HTTP handler: the payment API, /metrics and /__pgsim/.
func (s *Server) Handler() http.Handler { return s.handler }

// Start listens on addr ("127.0.0.1:0" picks a free port) and serves in the
// background; it returns once the listener is open. ctx bounds only the
// listening step; stop the server with Close.
func (s *Server) Start(ctx context.Context, addr string) error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed.Load() {
		return errors.New("pgsim: start: server is closed")
	}
	if s.httpSrv != nil {
		return errors.New("pgsim: start: already started")
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("pgsim: listen on %s: %w", addr, err)
	}
	if !IsLoopback(ln.Addr()) {
		s.exposed.Store(true)
		if s.cfg.ControlToken == "" {
			s.logger.Warn("pgsim listens on a non-loopback address: anyone who can reach it can use it; the control API (/__pgsim/) is refused until you restart with --control-token", "addr", ln.Addr().String())
		} else {
			s.logger.Warn("pgsim listens on a non-loopback address: anyone who can reach it can use it; the control API needs the "+ControlTokenHeader+" header", "addr", ln.Addr().String())
		}
	}
	s.listener, s.httpSrv = s.cfg.Limits.Serve(ln, s.handler, s.logger, "pgsim")
	s.logger.Info("pgsim listening", "addr", ln.Addr().String())
	return nil
}

// URL returns the base URL, "http://127.0.0.1:PORT"; "" before Start.
func (s *Server) URL() string {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.listener == nil {
		return ""
	}
	return "http://" + s.listener.Addr().String()
}

// SetBehavior validates b and makes it the behaviour of every later request.
func (s *Server) SetBehavior(b behavior.Behavior) error {
	if err := b.Validate(); err != nil {
		return err
	}
	s.decideMu.Lock()
	s.behav = b
	s.decideMu.Unlock()
	s.setBehaviorMetrics(b)
	return nil
}

// Behavior returns the current behaviour.
func (s *Server) Behavior() behavior.Behavior {
	s.decideMu.Lock()
	defer s.decideMu.Unlock()
	return s.behav
}

func (s *Server) setBehaviorMetrics(b behavior.Behavior) {
	slow := 0.0
	if b.Slow {
		slow = 1
	}
	s.metrics.behaviour.WithLabelValues("error_rate").Set(b.ErrorRate)
	s.metrics.behaviour.WithLabelValues("hang_rate").Set(b.HangRate)
	s.metrics.behaviour.WithLabelValues("reset_rate").Set(b.ResetRate)
	s.metrics.behaviour.WithLabelValues("slow").Set(slow)
}

// Attempts returns a copy of the in-memory attempt log, oldest first.
func (s *Server) Attempts() []Attempt { return s.log.Attempts() }

// ResetStats clears the attempt log, the per-order counts and the request
// counters of Stats. Transactions, Prometheus counters and the file log stay.
func (s *Server) ResetStats() {
	s.decideMu.Lock()
	s.log.Reset()
	s.decideMu.Unlock()
	s.requests.reset()
}

// Close stops the server: no new connections; in-flight requests finish their
// delays until ctx's deadline, then they are cut; pending settlements are
// abandoned, callback workers stop, the attempt log file is flushed and closed.
// Close is safe to call more than once.
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
				errs = append(errs, fmt.Errorf("pgsim: close listener: %w", cerr))
			}
		}
	}
	s.cutOnce.Do(func() { close(s.cut) })
	s.callbacks.close(ctx)
	if err := s.log.Flush(); err != nil {
		errs = append(errs, err)
	}
	if s.logFile != nil {
		if err := s.logFile.Close(); err != nil {
			errs = append(errs, fmt.Errorf("pgsim: close attempt log: %w", err))
		}
	}
	return errors.Join(errs...)
}

// scaled divides d by the configured speed.
func (s *Server) scaled(d time.Duration) time.Duration {
	if s.cfg.Speed == 1 || d == 0 {
		return d
	}
	return time.Duration(float64(d) / s.cfg.Speed)
}
