package springconf

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cbprobe/cbprobe/breaker"
)

// DefaultDBLatency is the reference service's simulated database work per
// transaction when demo.db-latency is unset.
const DefaultDBLatency = 3 * time.Millisecond

// Service is one guarded call resolved from a configuration file the way the
// reference service (cbprobe's demo and examples/spring-commerce) reads it at
// start-up: Retry( CircuitBreaker( TimeLimiter( call ))), each resolved for its
// runtime name, with the service's own pg.* and demo.* keys on top.
//
// It is the one resolution every command shares: the demo runs it, and
// `predict`, `experiment` and `lint` simulate or check it, so a prediction and a
// run of the same file cannot disagree about the configuration.
type Service struct {
	// BreakerName is the runtime name the breaker and the time limiter are resolved for.
	BreakerName string
	// RetryName is the runtime name the retry is resolved for.
	RetryName string
	// Breaker is the circuit breaker configuration.
	Breaker breaker.Config
	// TimeLimiter is the time limiter configuration.
	TimeLimiter breaker.TimeLimiterConfig
	// Retry is the retry resolved for RetryName, with pg.retry-max-attempts and
	// pg.retry-wait applied when they are set. Its Retryable is the file's; whether a
	// call the open breaker refused is retried is RetryOnRejection, applied by the caller.
	Retry breaker.RetryConfig
	// RetryOnRejection is pg.retry-on-rejection (default false): retry a call the
	// open breaker refused (CallNotPermitted).
	RetryOnRejection bool
	// DBLatency is demo.db-latency, the service's own work per database transaction
	// (three per payment request); DefaultDBLatency when unset.
	DBLatency time.Duration
}

// Service service keys: the reference service's settings beside the Resilience4j ones.
const (
	KeyRetryMaxAttempts = "pg.retry-max-attempts"
	KeyRetryWait        = "pg.retry-wait"
	KeyRetryOnRejection = "pg.retry-on-rejection"
	KeyDBLatency        = "demo.db-latency"
)

// ResolveService resolves the guarded call named breakerName (breaker and time
// limiter) and retryName (retry; "" means breakerName). Errors name the key.
func (f *File) ResolveService(breakerName, retryName string) (Service, error) {
	if retryName == "" {
		retryName = breakerName
	}
	s := Service{BreakerName: breakerName, RetryName: retryName, DBLatency: DefaultDBLatency}
	r, err := f.Resolve(breakerName)
	if err != nil {
		return Service{}, fmt.Errorf("circuit breaker %q: %w", breakerName, err)
	}
	s.Breaker = r.Config
	if s.TimeLimiter, _, err = f.ResolveTimeLimiter(breakerName); err != nil {
		return Service{}, fmt.Errorf("time limiter %q: %w", breakerName, err)
	}
	if s.Retry, _, err = f.ResolveRetry(retryName); err != nil {
		return Service{}, fmt.Errorf("retry %q: %w", retryName, err)
	}
	cfgErr := func(key, msg string) error { return &Error{File: f.Name(), Key: key, Msg: msg} }
	if v, ok := f.Get(KeyRetryMaxAttempts); ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			return Service{}, cfgErr(KeyRetryMaxAttempts, fmt.Sprintf("%q is not a whole number >= 1", v))
		}
		s.Retry.MaxAttempts = n
	}
	if v, ok := f.Get(KeyRetryWait); ok {
		d, err := ParseDuration(strings.TrimSpace(v))
		if err != nil || d < 0 {
			return Service{}, cfgErr(KeyRetryWait, fmt.Sprintf("%q is not a duration >= 0 (e.g. 100ms)", v))
		}
		s.Retry.WaitDuration = d
	}
	if err := s.Retry.Validate(); err != nil {
		return Service{}, cfgErr(KeyRetryMaxAttempts, err.Error())
	}
	if v, ok := f.Get(KeyRetryOnRejection); ok {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return Service{}, cfgErr(KeyRetryOnRejection, fmt.Sprintf("%q is not true or false", v))
		}
		s.RetryOnRejection = b
	}
	if v, ok := f.Get(KeyDBLatency); ok {
		d, err := ParseDuration(strings.TrimSpace(v))
		if err != nil || d < 0 {
			return Service{}, cfgErr(KeyDBLatency, fmt.Sprintf("%q is not a duration >= 0", v))
		}
		s.DBLatency = d
	}
	return s, nil
}
