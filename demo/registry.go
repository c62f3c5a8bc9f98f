package demo

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cbprobe/cbprobe/breaker"
	"github.com/cbprobe/cbprobe/springconf"
)

// cbEntry is one breaker of the registry with its event buffer and meters.
type cbEntry struct {
	cb                          *breaker.CircuitBreaker
	events                      *ring[breaker.Event]
	meters                      *breakerMeters
	registerHealth, allowToFail bool
}

type tlEntry struct {
	tl     *breaker.TimeLimiter
	events *ring[breaker.TimeLimiterEvent]
}

type retryEntry struct {
	r      *breaker.Retry
	events *ring[breaker.RetryEvent]
}

// registry holds the breakers, time limiters and retries by name, as the three
// Resilience4j registries of a Spring application do.
type registry struct {
	file   *springconf.File
	clock  breaker.Clock
	seed   uint64
	logger *slog.Logger

	mu      sync.Mutex
	cbs     map[string]*cbEntry
	tls     map[string]*tlEntry
	retries map[string]*retryEntry
}

func newRegistry(f *springconf.File, clock breaker.Clock, seed uint64, logger *slog.Logger) *registry {
	return &registry{file: f, clock: clock, seed: seed, logger: logger,
		cbs: map[string]*cbEntry{}, tls: map[string]*tlEntry{}, retries: map[string]*retryEntry{}}
}

// createEager builds every instances.<name> (and backends.<name>) of the three
// sections, as the Spring registries do at start-up.
func (r *registry) createEager() error {
	for _, k := range r.file.InstanceNames("circuitbreaker") {
		if k.Map == "configs" {
			continue
		}
		if _, err := r.breaker(k.Bound); err != nil {
			return err
		}
	}
	for _, k := range r.file.InstanceNames("timelimiter") {
		if k.Map == "configs" {
			continue
		}
		if _, err := r.timeLimiter(k.Bound); err != nil {
			return err
		}
	}
	for _, k := range r.file.InstanceNames("retry") {
		if k.Map == "configs" {
			continue
		}
		if _, err := r.retry(k.Bound, nil); err != nil {
			return err
		}
	}
	return nil
}

// breaker returns the breaker called name, creating it from the configuration
// Spring would give it (springconf Resolve) on first use.
func (r *registry) breaker(name string) (*cbEntry, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.cbs[name]; ok {
		return e, nil
	}
	res, err := r.file.Resolve(name)
	if err != nil {
		return nil, fmt.Errorf("resolve circuit breaker %q: %w", name, err)
	}
	cb, err := breaker.New(name, res.Config, breaker.WithClock(r.clock))
	if err != nil {
		return nil, fmt.Errorf("create circuit breaker %q: %w", name, err)
	}
	if err := applyInitialState(cb, res.InitialState); err != nil {
		return nil, fmt.Errorf("circuit breaker %q: initial-state %v: %w", name, res.InitialState, err)
	}
	size := res.EventConsumerBufferSize
	if size < 1 {
		size = 100
	}
	e := &cbEntry{cb: cb, events: newRing[breaker.Event](size), meters: &breakerMeters{clock: r.clock},
		registerHealth: res.RegisterHealthIndicator, allowToFail: res.AllowHealthIndicatorToFail}
	cb.Subscribe(func(ev breaker.Event) {
		e.events.add(ev)
		e.meters.onEvent(ev)
	})
	r.cbs[name] = e
	r.logger.Debug("circuit breaker created", "name", name, "instance", res.MatchedInstance)
	return e, nil
}

func (r *registry) timeLimiter(name string) (*tlEntry, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.tls[name]; ok {
		return e, nil
	}
	cfg, _, err := r.file.ResolveTimeLimiter(name)
	if err != nil {
		return nil, fmt.Errorf("resolve time limiter %q: %w", name, err)
	}
	tl := breaker.NewTimeLimiter(name, cfg, r.clock)
	e := &tlEntry{tl: tl, events: newRing[breaker.TimeLimiterEvent](100)}
	tl.Subscribe(e.events.add)
	r.tls[name] = e
	return e, nil
}

// retry returns the retry called name; adjust (may be nil) changes the resolved
// configuration before the retry is built on first use.
func (r *registry) retry(name string, adjust func(*breaker.RetryConfig)) (*retryEntry, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.retries[name]; ok {
		return e, nil
	}
	cfg, _, err := r.file.ResolveRetry(name)
	if err != nil {
		return nil, fmt.Errorf("resolve retry %q: %w", name, err)
	}
	if adjust != nil {
		adjust(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("retry %q: %w", name, err)
	}
	rt := breaker.NewRetry(name, cfg, r.clock, rand.New(rand.NewPCG(r.seed, uint64(len(r.retries)+1))))
	e := &retryEntry{r: rt, events: newRing[breaker.RetryEvent](100)}
	rt.Subscribe(e.events.add)
	r.retries[name] = e
	return e, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// breakerNames returns the breaker names sorted.
func (r *registry) breakerEntries() ([]string, []*cbEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := sortedKeys(r.cbs)
	out := make([]*cbEntry, len(names))
	for i, n := range names {
		out[i] = r.cbs[n]
	}
	return names, out
}

func (r *registry) lookupBreaker(name string) *cbEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cbs[name]
}

func (e *cbEntry) view() BreakerView {
	st, m := e.cb.Snapshot()
	cfg := e.cb.Config()
	v := BreakerView{Name: e.cb.Name(), State: st, FailureRate: m.FailureRate, SlowCallRate: m.SlowCallRate,
		FailureRateThreshold: cfg.FailureRateThreshold, SlowCallRateThreshold: cfg.SlowCallRateThreshold,
		BufferedCalls: m.BufferedCalls, FailedCalls: m.FailedCalls, SlowCalls: m.SlowCalls,
		SlowFailedCalls: m.SlowFailedCalls, NotPermittedCalls: m.NotPermittedCalls}
	e.meters.fill(&v)
	return v
}

func (r *registry) breakerViews() []BreakerView {
	_, es := r.breakerEntries()
	out := make([]BreakerView, len(es))
	for i, e := range es {
		out[i] = e.view()
	}
	return out
}

func (r *registry) healthViews() []HealthView {
	_, es := r.breakerEntries()
	var out []HealthView
	for _, e := range es {
		if e.registerHealth {
			out = append(out, HealthView{BreakerView: e.view(), AllowHealthIndicatorToFail: e.allowToFail})
		}
	}
	return out
}

func (r *registry) timeLimiterViews() ([]string, []TimeLimiterView) {
	r.mu.Lock()
	names := sortedKeys(r.tls)
	es := make([]*tlEntry, len(names))
	for i, n := range names {
		es[i] = r.tls[n]
	}
	r.mu.Unlock()
	out := make([]TimeLimiterView, len(es))
	for i, e := range es {
		m := e.tl.Metrics()
		out[i] = TimeLimiterView{Name: names[i], Successful: float64(m.Successful), Failed: float64(m.Failed), Timeout: float64(m.Timeout)}
	}
	return names, out
}

func (r *registry) retryViews() ([]string, []RetryView) {
	r.mu.Lock()
	names := sortedKeys(r.retries)
	es := make([]*retryEntry, len(names))
	for i, n := range names {
		es[i] = r.retries[n]
	}
	r.mu.Unlock()
	out := make([]RetryView, len(es))
	for i, e := range es {
		m := e.r.Metrics()
		out[i] = RetryView{Name: names[i], SuccessfulWithoutRetry: float64(m.SuccessfulWithoutRetry), SuccessfulWithRetry: float64(m.SuccessfulWithRetry),
			FailedWithoutRetry: float64(m.FailedWithoutRetry), FailedWithRetry: float64(m.FailedWithRetry)}
	}
	return names, out
}

// cbEvents returns the buffered events of one breaker (name != "") or of all,
// merged and stably sorted by creation time; typ filters when not "".
func (r *registry) cbEvents(name, typ string) []CBEventView {
	var evs []breaker.Event
	if name != "" {
		if e := r.lookupBreaker(name); e != nil {
			evs = e.events.snapshot()
		}
	} else {
		_, es := r.breakerEntries()
		for _, e := range es {
			evs = append(evs, e.events.snapshot()...)
		}
		sort.SliceStable(evs, func(i, j int) bool { return evs[i].CreationTime.Before(evs[j].CreationTime) })
	}
	out := make([]CBEventView, 0, len(evs))
	for _, ev := range evs {
		if typ != "" && ev.Type.String() != typ {
			continue
		}
		v := CBEventView{Breaker: ev.BreakerName, Type: ev.Type.String(), Time: ev.CreationTime, StateTransition: ev.Transition()}
		switch ev.Type {
		case breaker.EventSuccess, breaker.EventError, breaker.EventIgnoredError:
			v.HasDuration = true
			v.DurationMs = ev.ElapsedDuration.Milliseconds()
			if ev.Err != nil {
				v.ErrorMessage = javaThrowable(ev.Err)
			}
		}
		out = append(out, v)
	}
	return out
}

func (r *registry) tlEvents(name, typ string) []TLEventView {
	evs := mergedEvents(&r.mu, r.tls, name, func(e *tlEntry) *ring[breaker.TimeLimiterEvent] { return e.events },
		func(ev breaker.TimeLimiterEvent) time.Time { return ev.CreationTime })
	out := make([]TLEventView, 0, len(evs))
	for _, ev := range evs {
		if typ == "" || ev.Type == typ {
			out = append(out, TLEventView{Limiter: ev.LimiterName, Type: ev.Type, Time: ev.CreationTime})
		}
	}
	return out
}

// mergedEvents snapshots the event rings of the entry named name, or of every
// entry when name is "" (then merged and stably sorted by creation time). The
// entries are picked under mu; the rings are read after it is released.
func mergedEvents[V any, E any](mu *sync.Mutex, entries map[string]V, name string, events func(V) *ring[E], at func(E) time.Time) []E {
	mu.Lock()
	var picked []V
	for _, n := range sortedKeys(entries) {
		if name == "" || n == name {
			picked = append(picked, entries[n])
		}
	}
	mu.Unlock()
	var evs []E
	for _, e := range picked {
		evs = append(evs, events(e).snapshot()...)
	}
	if name == "" {
		sort.SliceStable(evs, func(i, j int) bool { return at(evs[i]).Before(at(evs[j])) })
	}
	return evs
}

func (r *registry) retryEvents(name, typ string) []RetryEventView {
	evs := mergedEvents(&r.mu, r.retries, name, func(e *retryEntry) *ring[breaker.RetryEvent] { return e.events },
		func(ev breaker.RetryEvent) time.Time { return ev.CreationTime })
	out := make([]RetryEventView, 0, len(evs))
	for _, ev := range evs {
		if typ != "" && ev.Type != typ {
			continue
		}
		v := RetryEventView{Retry: ev.RetryName, Type: ev.Type, Time: ev.CreationTime, NumberOfAttempts: ev.NumberOfAttempts}
		if ev.Err != nil {
			v.ErrorMessage = javaThrowable(ev.Err)
		}
		out = append(out, v)
	}
	return out
}

// eventTypeFilter upper-cases a type path segment as Type.valueOf(s.toUpperCase())
// does and checks it against the allowed names.
func eventTypeFilter(s string, allowed []string) (string, bool) {
	u := strings.ToUpper(s)
	for _, a := range allowed {
		if a == u {
			return u, true
		}
	}
	return "", false
}

// applyInitialState moves a new breaker to its configured initial-state before
// anyone subscribes, so no event is published, as the library builds it.
func applyInitialState(cb *breaker.CircuitBreaker, s breaker.State) error {
	switch s {
	case breaker.StateClosed:
		return nil
	case breaker.StateHalfOpen:
		if err := cb.TransitionTo(breaker.StateOpen); err != nil {
			return err
		}
	}
	return cb.TransitionTo(s)
}
