package demo

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/cbprobe/cbprobe/springconf"
)

// BulkheadSettings are the sizes of the thread-pool bulkhead Spring Cloud
// CircuitBreaker runs every Feign call on (Resilience4jBulkheadProvider), read
// from resilience4j.thread-pool-bulkhead.configs.default. Unset sizes take
// Resilience4j's defaults, which depend on the machine: core = CPUs − 1 (at
// least 1), max = CPUs, queue 100. On a 2-core machine that is one thread.
type BulkheadSettings struct {
	// Enabled is spring.cloud.circuitbreaker.bulkhead.resilience4j.enabled (default true).
	Enabled bool
	// CoreThreads is core-thread-pool-size (threads kept, in calls).
	CoreThreads int
	// MaxThreads is max-thread-pool-size (threads at most, in calls).
	MaxThreads int
	// QueueCapacity is queue-capacity (calls waiting for a thread at most).
	QueueCapacity int
}

// bulkheadPrefix is where Spring Boot reads the default thread-pool bulkhead.
const bulkheadPrefix = "resilience4j.thread-pool-bulkhead.configs.default."

// resolveBulkhead reads the thread-pool bulkhead from f, for a machine with cpus
// processors; errors name the key.
func resolveBulkhead(f *springconf.File, cpus int) (BulkheadSettings, error) {
	cfgErr := func(key, msg string) error { return &springconf.Error{File: f.Name(), Key: key, Msg: msg} }
	b := BulkheadSettings{Enabled: true, CoreThreads: max(cpus-1, 1), MaxThreads: max(cpus, 1), QueueCapacity: 100}
	if v, ok := f.Get("spring.cloud.circuitbreaker.bulkhead.resilience4j.enabled"); ok {
		on, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return b, cfgErr("spring.cloud.circuitbreaker.bulkhead.resilience4j.enabled", fmt.Sprintf("%q is not true or false", v))
		}
		b.Enabled = on
	}
	for _, k := range []struct {
		key string
		to  *int
		min int
	}{{"core-thread-pool-size", &b.CoreThreads, 1}, {"max-thread-pool-size", &b.MaxThreads, 1}, {"queue-capacity", &b.QueueCapacity, 0}} {
		v, ok := f.Get(bulkheadPrefix + k.key)
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < k.min || n > 100000 {
			return b, cfgErr(bulkheadPrefix+k.key, fmt.Sprintf("%q is not a whole number from %d to 100000", v, k.min))
		}
		*k.to = n
	}
	if b.CoreThreads > b.MaxThreads {
		return b, cfgErr(bulkheadPrefix+"core-thread-pool-size",
			fmt.Sprintf("%d is above max-thread-pool-size %d (Resilience4j refuses to start)", b.CoreThreads, b.MaxThreads))
	}
	return b, nil
}

// defaultCPUs is what Java's Runtime.availableProcessors() reports on this machine.
func defaultCPUs() int { return runtime.NumCPU() }

// BulkheadFullError is Resilience4j's BulkheadFullException: every thread of the
// pool is busy and its queue is full.
type BulkheadFullError struct {
	// Name is the bulkhead's name (the breaker's).
	Name string
}

func (e *BulkheadFullError) Error() string {
	return fmt.Sprintf("Bulkhead '%s' is full and does not permit further calls", e.Name)
}

// JavaClass is the exception class the real service reports.
func (e *BulkheadFullError) JavaClass() string {
	return "io.github.resilience4j.bulkhead.BulkheadFullException"
}

// threadPool admits calls as Java's ThreadPoolExecutor under Resilience4j's
// ThreadPoolBulkhead does: a new thread while fewer than core exist, else an
// idle thread, else the queue, else a new thread up to max, else refusal. A
// queued call whose caller gives up (the TimeLimiter's cancel) never runs; a
// running call keeps its thread until the gateway answers, as a Feign call
// blocked in a socket read ignores the interrupt.
type threadPool struct {
	name     string
	settings BulkheadSettings

	mu      sync.Mutex
	threads int // threads in the pool
	busy    int // threads running a call
	queue   []chan struct{}
}

func newThreadPool(name string, s BulkheadSettings) *threadPool {
	return &threadPool{name: name, settings: s}
}

// run runs fn on a thread of the pool. It returns fn's error, ctx's error when
// the caller gave up first (fn then still finishes on its thread), or a
// *BulkheadFullError.
func (p *threadPool) run(ctx context.Context, fn func(context.Context) error) error {
	p.mu.Lock()
	s := p.settings
	switch {
	case p.threads < s.CoreThreads:
		p.threads++
		p.busy++
	case p.busy < p.threads:
		p.busy++
	case len(p.queue) < s.QueueCapacity:
		turn := make(chan struct{})
		p.queue = append(p.queue, turn)
		p.mu.Unlock()
		select {
		case <-turn:
		case <-ctx.Done():
			if !p.leave(turn) {
				p.release() // the turn came as the caller gave up: hand it on
			}
			return ctx.Err()
		}
		return p.start(ctx, fn)
	case p.threads < s.MaxThreads:
		p.threads++
		p.busy++
	default:
		p.mu.Unlock()
		return &BulkheadFullError{Name: p.name}
	}
	p.mu.Unlock()
	return p.start(ctx, fn)
}

// start runs fn on the thread just taken and answers the caller when fn ends or
// the caller gives up, whichever is first.
func (p *threadPool) start(ctx context.Context, fn func(context.Context) error) error {
	done := make(chan error, 1)
	go func() {
		defer p.release()
		done <- fn(context.WithoutCancel(ctx))
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// leave takes a queued caller's turn out of the queue; false when the turn was
// already handed to it.
func (p *threadPool) leave(turn chan struct{}) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, t := range p.queue {
		if t == turn {
			p.queue = append(p.queue[:i], p.queue[i+1:]...)
			return true
		}
	}
	return false
}

// release frees a thread: the first queued call takes it, or it goes idle (a
// thread above the core count leaves the pool, its keep-alive being 20 ms).
func (p *threadPool) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queue) > 0 {
		turn := p.queue[0]
		p.queue = p.queue[1:]
		close(turn)
		return
	}
	p.busy--
	if p.threads > p.settings.CoreThreads {
		p.threads--
	}
}

// view is the pool's gauges (ThreadPoolBulkhead.Metrics).
func (p *threadPool) view() BulkheadView {
	p.mu.Lock()
	defer p.mu.Unlock()
	return BulkheadView{Name: p.name, ActiveThreads: p.busy, AvailableThreads: p.settings.MaxThreads - p.busy,
		CoreThreads: p.settings.CoreThreads, MaxThreads: p.settings.MaxThreads,
		QueueCapacity: p.settings.QueueCapacity, QueueDepth: len(p.queue), Threads: p.threads}
}
