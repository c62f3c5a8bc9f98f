package sim

import (
	"time"

	"github.com/cbprobe/cbprobe/attack"
	"github.com/cbprobe/cbprobe/breaker"
	"github.com/cbprobe/cbprobe/pgsim/behavior"
)

// referenceConfig is DESIGN.md's reference breaker setting.
func referenceConfig() breaker.Config {
	c := breaker.DefaultConfig()
	c.SlidingWindowSize = 20
	c.FailureRateThreshold = 60
	c.SlowCallDurationThreshold = 100 * time.Millisecond
	c.SlowCallRateThreshold = 50
	c.WaitDurationInOpenState = 10 * time.Second
	c.PermittedNumberOfCallsInHalfOpenState = 5
	return c
}

// referenceArm is the retry experiment's arm: one user, 40 sequential requests.
func referenceArm(attempts int) Arm {
	rc := breaker.DefaultRetryConfig()
	rc.MaxAttempts = attempts
	return Arm{
		Name:            "reference",
		Breaker:         referenceConfig(),
		TimeLimiter:     &breaker.TimeLimiterConfig{TimeoutDuration: 600 * time.Millisecond, CancelRunningFuture: true},
		Retry:           rc,
		Gateway:         behavior.DefaultBehavior(),
		CallOverhead:    time.Millisecond,
		DBLatency:       behavior.Uniform{Min: 2 * time.Millisecond, Max: 5 * time.Millisecond},
		Users:           1,
		RequestsPerUser: 40,
	}
}

// windowTypeArm is the window-type experiment's arm.
func windowTypeArm(w breaker.WindowType) Arm {
	a := referenceArm(3)
	a.Users, a.RequestsPerUser = 0, 0
	a.Phases = []attack.Phase{{Name: "phase1", Rate: 15, Duration: 5 * time.Second}, {Name: "phase2", Duration: 15 * time.Second}, {Name: "phase3", Rate: 5, Duration: 8 * time.Second}}
	if w == breaker.TimeBased {
		a.Breaker.SlidingWindowType = breaker.TimeBased
		a.Breaker.SlidingWindowSize = 10
	}
	return a
}
