package demo

import (
	"github.com/cbprobe/cbprobe/breaker"
	"github.com/cbprobe/cbprobe/springconf"
)

// Settings are the resilience settings the reference service runs its payment
// call with: the call resolved by springconf.File.ResolveService for FeignName
// (the one resolution predict, experiment and lint share), and Spring Cloud's
// thread-pool bulkhead around it.
type Settings struct {
	springconf.Service
	// Bulkhead is Spring Cloud's thread-pool bulkhead around the payment call.
	Bulkhead BulkheadSettings
}

// ResolveSettings reads the payment call's settings from f. Errors name the key
// (exit code 2).
func ResolveSettings(f *springconf.File) (Settings, error) {
	svc, err := f.ResolveService(FeignName, FeignName)
	if err != nil {
		return Settings{}, err
	}
	s := Settings{Service: svc}
	if s.Bulkhead, err = resolveBulkhead(f, defaultCPUs()); err != nil {
		return Settings{}, err
	}
	return s, nil
}

// serviceRetry is the retry the service runs: rc, except that a call the open
// breaker refused (CallNotPermitted) is retried only when onRejection.
func serviceRetry(rc breaker.RetryConfig, onRejection bool) breaker.RetryConfig {
	base := rc.Retryable
	rc.Retryable = func(err error) bool {
		if !onRejection && breaker.IsCallNotPermitted(err) {
			return false
		}
		return base == nil || base(err)
	}
	return rc
}
