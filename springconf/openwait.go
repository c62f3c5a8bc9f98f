package springconf

import (
	"strings"
	"time"

	"github.com/cbprobe/cbprobe/breaker"
)

// openWaitInterval is the waitIntervalFunctionInOpenState that Spring's
// CommonCircuitBreakerConfigurationProperties builds (resilience4j.md §1.1), or
// nil for the fixed wait. Spring reads the back-off keys from the same
// properties object that sets wait-duration-in-open-state above 0 ms, so only
// keys set at that level (the same key prefix) count: enable-exponential-backoff
// with exponential-backoff-multiplier (1.5 when unset) and
// exponential-max-wait-duration-in-open-state (applied only when the multiplier
// is set there too), else enable-randomized-wait with randomized-wait-factor
// (0.5 when unset). Both enabled at one level is refused by checkCombinations.
// Not exact: a level that sets a back-off key without the wait (say an instance
// turning back-off off under a base config that enables it) is ignored here,
// while Spring keeps the base config's function.
func openWaitInterval(e eff, wait *setting) breaker.IntervalFunction {
	if wait == nil || wait.val.d < time.Millisecond || !strings.HasSuffix(wait.key, keyWaitInOpen) {
		return nil
	}
	level := strings.TrimSuffix(wait.key, keyWaitInOpen)
	same := func(k string) *setting {
		if s := e[k]; s != nil && s.key == level+k {
			return s
		}
		return nil
	}
	if x := same(keyEnableExponentialBackoff); x != nil && x.val.b {
		mult, max := 1.5, time.Duration(0)
		if m := same(keyExponentialMultiplier); m != nil {
			mult = m.val.f
			if c := same(keyExponentialMaxWaitInOpen); c != nil {
				max = c.val.d
			}
		}
		return breaker.ExponentialInterval(wait.val.d, mult, max)
	}
	if x := same(keyEnableRandomizedWait); x != nil && x.val.b {
		f := 0.5
		if r := same(keyRandomizedWaitFactor); r != nil {
			f = r.val.f
		}
		return breaker.RandomizedInterval(wait.val.d, f, nil)
	}
	return nil
}
