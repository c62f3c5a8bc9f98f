package demo

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cbprobe/cbprobe/breaker"
	"github.com/cbprobe/cbprobe/springconf"
)

// Settings are the resilience settings the reference service runs its payment
// call with, resolved from a configuration file exactly as the service does at
// start-up. Experiments hand the same values to the simulation, so a prediction
// and a run cannot disagree about the configuration.
type Settings struct {
	// BreakerName is the Feign-style name the breaker, time limiter and retry are resolved for.
	BreakerName string
	// Breaker is the circuit breaker configuration.
	Breaker breaker.Config
	// TimeLimiter is the time limiter configuration.
	TimeLimiter breaker.TimeLimiterConfig
	// Retry is the retry configuration with pg.retry-max-attempts and pg.retry-wait
	// applied; its Retryable refuses CallNotPermitted unless RetryOnRejection.
	Retry breaker.RetryConfig
	// RetryOnRejection is pg.retry-on-rejection (default false).
	RetryOnRejection bool
	// DBLatency is demo.db-latency, the simulated database work per transaction
	// (DefaultDBLatency when unset).
	DBLatency time.Duration
	// Bulkhead is Spring Cloud's thread-pool bulkhead around the payment call.
	Bulkhead BulkheadSettings
}

// ResolveSettings reads the payment call's settings from f: the breaker, time
// limiter and retry resolved for FeignName, and the pg.* / demo.* keys. Errors
// name the key (exit code 2).
func ResolveSettings(f *springconf.File) (Settings, error) {
	cfgErr := func(key, msg string) error { return &springconf.Error{File: f.Name(), Key: key, Msg: msg} }
	s := Settings{BreakerName: FeignName, DBLatency: DefaultDBLatency}
	r, err := f.Resolve(FeignName)
	if err != nil {
		return Settings{}, err
	}
	s.Breaker = r.Config
	if s.TimeLimiter, _, err = f.ResolveTimeLimiter(FeignName); err != nil {
		return Settings{}, err
	}
	rc, _, err := f.ResolveRetry(FeignName)
	if err != nil {
		return Settings{}, err
	}
	rc.MaxAttempts = DefaultRetryMaxAttempts
	if v, ok := f.Get("pg.retry-max-attempts"); ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			return Settings{}, cfgErr("pg.retry-max-attempts", fmt.Sprintf("%q is not a whole number >= 1", v))
		}
		rc.MaxAttempts = n
	}
	if v, ok := f.Get("pg.retry-wait"); ok {
		d, err := springconf.ParseDuration(strings.TrimSpace(v))
		if err != nil || d < 0 {
			return Settings{}, cfgErr("pg.retry-wait", fmt.Sprintf("%q is not a duration >= 0 (e.g. 100ms)", v))
		}
		rc.WaitDuration = d
	}
	if v, ok := f.Get("pg.retry-on-rejection"); ok {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return Settings{}, cfgErr("pg.retry-on-rejection", fmt.Sprintf("%q is not true or false", v))
		}
		s.RetryOnRejection = b
	}
	base := rc.Retryable
	onRejection := s.RetryOnRejection
	rc.Retryable = func(err error) bool {
		if !onRejection && breaker.IsCallNotPermitted(err) {
			return false
		}
		return base == nil || base(err)
	}
	if err := rc.Validate(); err != nil {
		return Settings{}, cfgErr("pg.retry-max-attempts", err.Error())
	}
	s.Retry = rc
	if s.Bulkhead, err = resolveBulkhead(f, defaultCPUs()); err != nil {
		return Settings{}, err
	}
	if v, ok := f.Get("demo.db-latency"); ok {
		d, err := springconf.ParseDuration(strings.TrimSpace(v))
		if err != nil || d < 0 {
			return Settings{}, cfgErr("demo.db-latency", fmt.Sprintf("%q is not a duration >= 0", v))
		}
		s.DBLatency = d
	}
	return s, nil
}
