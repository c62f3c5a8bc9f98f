package sim

import (
	"time"

	"github.com/cbprobe/cbprobe/pgsim/behavior"
	"github.com/cbprobe/cbprobe/springconf"
)

// DefaultCallOverhead is the HTTP round trip added to every simulated gateway
// attempt's duration (Arm.CallOverhead) when nothing else is known.
const DefaultCallOverhead = time.Millisecond

// ServiceArm is the simulated twin of the reference service running s: its
// breaker, time limiter and retry, retry on rejection, its database work per step
// (fixed at s.DBLatency) and DefaultCallOverhead. The gateway and the traffic are
// the caller's to set. It is the one conversion from a resolved configuration to an
// arm, shared by `predict` and `experiment`.
func ServiceArm(name string, s springconf.Service) Arm {
	tl := s.TimeLimiter
	a := Arm{
		Name:             name,
		BreakerName:      s.BreakerName,
		Breaker:          s.Breaker,
		TimeLimiter:      &tl,
		Retry:            s.Retry,
		RetryOnRejection: s.RetryOnRejection,
		Gateway:          behavior.DefaultBehavior(),
		CallOverhead:     DefaultCallOverhead,
	}
	if s.DBLatency > 0 {
		a.DBLatency = behavior.Fixed{D: s.DBLatency}
	}
	return a
}
