package sim

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/cbprobe/cbprobe/attack"
	"github.com/cbprobe/cbprobe/breaker"
	"github.com/cbprobe/cbprobe/pgsim/behavior"
)

// Arm is one experiment arm in virtual time: the service's resilience
// composition Retry(CircuitBreaker(TimeLimiter(gateway call))), the gateway's
// behaviour, the service's own database work and the traffic.
//
// A request is the reference flow: order creation (one DB step), then payment
// (one DB step before the gateway call, the gateway attempts, one DB step in the
// success or the failure path). The breaker sees only gateway attempts.
type Arm struct {
	// Name labels the arm in results.
	Name string
	// BreakerName is the circuit breaker's name in events; "" means "sim".
	BreakerName string
	// Breaker is the circuit breaker configuration (validated by breaker.New).
	Breaker breaker.Config
	// TimeLimiter cuts a gateway attempt at its TimeoutDuration: the attempt ends
	// then as a failure (*breaker.TimeoutError) with elapsed = timeout. Nil: no TimeLimiter.
	TimeLimiter *breaker.TimeLimiterConfig
	// Retry is the outermost decorator: MaxAttempts counts the first attempt; waits
	// come from RetryConfig.Interval and retried errors from RetryConfig.ShouldRetry.
	Retry breaker.RetryConfig
	// RetryOnRejection makes a rejected attempt (CallNotPermitted) retryable like
	// any other error (subject to ShouldRetry). False, the reference service's
	// setting: a rejection ends the request as CIRCUIT_OPEN.
	RetryOnRejection bool
	// Gateway is the payment gateway's behaviour (pgsim's model, decided by
	// behavior.Behavior.Decide).
	Gateway behavior.Behavior
	// PhaseGateways optionally gives one behaviour per phase (same length as
	// Phases): an attempt uses the behaviour of the phase in which it starts
	// (the last one after the end). Nil: Gateway throughout.
	PhaseGateways []behavior.Behavior
	// CallOverhead is added to every gateway attempt's duration: the HTTP round
	// trip the breaker measures beyond the gateway's own delay (>= 0).
	CallOverhead time.Duration
	// DBLatency is the duration of one of the service's own DB steps (three per
	// request, also in the failure and rejection paths). Nil: no DB time.
	DBLatency behavior.Distribution
	// StartOpen starts the run with the breaker OPEN and its wait already
	// elapsed, as a breaker left open by an earlier run on the same service (an
	// OPEN breaker stays OPEN without traffic): the first call starts a HALF_OPEN trial.
	StartOpen bool
	// Phases is the open-model load: requests arrive at phase start + i/Rate
	// (attack.Phase.Planned of them per phase); a Rate of 0 is a pause. Used when Users is 0.
	Phases []attack.Phase
	// Users, when > 0, selects the closed model: Users users each send
	// RequestsPerUser requests back to back, waiting Think between them.
	Users int
	// RequestsPerUser is the number of requests each user sends (>= 1 when Users > 0).
	RequestsPerUser int
	// Think is the pause between one user's requests (>= 0).
	Think time.Duration
	// Replicas is the number of service instances behind the entry point (a load
	// balancer), each with its own breaker (own window and state, same Breaker
	// config) and its own Retry and TimeLimiter; the gateway is shared. A request
	// goes to one replica, chosen by Balance when it arrives, and all its attempts
	// go through that replica's breaker. 0 or 1: one instance, the single-service
	// run. At most MaxReplicas.
	Replicas int
	// Balance is the load balancer's policy across Replicas (round robin when zero).
	Balance Balance
}

// MaxReplicas is the most replicas one arm may have. A run keeps one breaker per
// replica and a prediction keeps a few hundred bytes per replica and run, so the
// bound keeps a 1,000-run prediction's per-instance results under about 30 MB.
const MaxReplicas = 100

// Balance is how the entry point spreads requests over the replicas.
type Balance uint8

const (
	// BalanceRoundRobin sends request k (1-based, in send order) to replica
	// (k−1) mod Replicas, as nginx's default upstream policy does.
	BalanceRoundRobin Balance = iota
	// BalanceRandom sends each request to a replica drawn uniformly from the
	// run's seeded random stream, as nginx's `random` policy does.
	BalanceRandom
)

// Balances lists the policies' names in the order ParseBalance knows them.
func Balances() []string { return []string{"round-robin", "random"} }

// String returns "round-robin" or "random".
func (b Balance) String() string {
	switch b {
	case BalanceRoundRobin:
		return "round-robin"
	case BalanceRandom:
		return "random"
	}
	return fmt.Sprintf("Balance(%d)", uint8(b))
}

// MarshalText implements encoding.TextMarshaler.
func (b Balance) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// ParseBalance reads "round-robin" (also "roundrobin", "rr") or "random",
// case-insensitively; "" is round robin.
func ParseBalance(s string) (Balance, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "round-robin", "roundrobin", "rr":
		return BalanceRoundRobin, nil
	case "random":
		return BalanceRandom, nil
	}
	return 0, fmt.Errorf("%q is not a balancing policy (want %s)", s, strings.Join(Balances(), " or "))
}

// Instances returns the number of simulated service instances: Replicas, or 1
// when Replicas is 0.
func (a *Arm) Instances() int { return max(1, a.Replicas) }

// Fleet reports whether the arm models more than one instance.
func (a *Arm) Fleet() bool { return a.Replicas > 1 }

// ArmError is a bad Arm field. It has exit code 2 (a usage or configuration error).
type ArmError struct {
	// Field names the Arm field, e.g. "Phases[2].Rate" or "Gateway".
	Field string
	// Msg says what is wrong.
	Msg string
}

// Error reads "sim: arm FIELD: MSG".
func (e *ArmError) Error() string { return "sim: arm " + e.Field + ": " + e.Msg }

// ExitCode is 2.
func (e *ArmError) ExitCode() int { return 2 }

func armErr(field, format string, args ...any) error {
	return &ArmError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Sequential reports whether the arm uses the closed model (users back to back).
func (a *Arm) Sequential() bool { return a.Users > 0 }

// MaxRequestsPerRun is the most requests one simulated run may plan (users ×
// requests per user, or the sum of the phases' planned requests). Validate
// refuses a larger arm: a run keeps a few hundred bytes per request in flight,
// and the median run's request log about 200 bytes per request, so the bound
// keeps one prediction under about 300 MB whatever the input. At 10/s it is
// 27.7 hours of traffic.
const MaxRequestsPerRun = 1_000_000

// PlannedRequests returns how many requests one run sends; an arm whose count
// does not fit in an int reports math.MaxInt (Validate refuses it).
func (a *Arm) PlannedRequests() int {
	if a.Sequential() {
		if a.RequestsPerUser > 0 && a.Users > math.MaxInt/a.RequestsPerUser {
			return math.MaxInt
		}
		return a.Users * a.RequestsPerUser
	}
	n := 0
	for _, p := range a.Phases {
		k := p.Planned()
		if k < 0 || n > math.MaxInt-k {
			return math.MaxInt
		}
		n += k
	}
	return n
}

// timeout returns the TimeLimiter's timeout, or -1 without a TimeLimiter.
func (a *Arm) timeout() time.Duration {
	if a.TimeLimiter == nil {
		return -1
	}
	return a.TimeLimiter.TimeoutDuration
}

// Validate checks the arm and returns an *ArmError naming the first bad field.
func (a *Arm) Validate() error {
	if err := a.Breaker.Validate(); err != nil {
		return armErr("Breaker", "%v", err)
	}
	if a.TimeLimiter != nil && a.TimeLimiter.TimeoutDuration < 0 {
		return armErr("TimeLimiter.TimeoutDuration", "%v must not be negative", a.TimeLimiter.TimeoutDuration)
	}
	if err := a.Retry.Validate(); err != nil {
		return armErr("Retry", "%v", err)
	}
	if err := a.Gateway.Validate(); err != nil {
		return armErr("Gateway", "%v", err)
	}
	if a.PhaseGateways != nil {
		if len(a.PhaseGateways) != len(a.Phases) {
			return armErr("PhaseGateways", "%d behaviours for %d phases", len(a.PhaseGateways), len(a.Phases))
		}
		for i, b := range a.PhaseGateways {
			if err := b.Validate(); err != nil {
				return armErr(fmt.Sprintf("PhaseGateways[%d]", i), "%v", err)
			}
		}
	}
	if a.CallOverhead < 0 {
		return armErr("CallOverhead", "%v must not be negative", a.CallOverhead)
	}
	if a.Think < 0 {
		return armErr("Think", "%v must not be negative", a.Think)
	}
	if a.Replicas < 0 || a.Replicas > MaxReplicas {
		return armErr("Replicas", "%d is not in [0, %d] (the limit, see docs/limits.md)", a.Replicas, MaxReplicas)
	}
	if a.Balance > BalanceRandom {
		return armErr("Balance", "%v is not one of %s", a.Balance, strings.Join(Balances(), ", "))
	}
	if a.Users < 0 {
		return armErr("Users", "%d must not be negative", a.Users)
	}
	if a.Sequential() {
		if a.RequestsPerUser < 1 {
			return armErr("RequestsPerUser", "%d must be at least 1 with %d users", a.RequestsPerUser, a.Users)
		}
		if a.Users > MaxRequestsPerRun {
			return armErr("Users", "%d users plan more than %d requests a run (the limit, see docs/limits.md)", a.Users, MaxRequestsPerRun)
		}
		if n := a.PlannedRequests(); n > MaxRequestsPerRun {
			return armErr("RequestsPerUser", "%d users × %d requests plan more than %d requests a run (the limit, see docs/limits.md)", a.Users, a.RequestsPerUser, MaxRequestsPerRun)
		}
		return nil
	}
	if len(a.Phases) == 0 {
		return armErr("Phases", "no phases and no users: nothing to send")
	}
	var total time.Duration
	for i, p := range a.Phases {
		if !(p.Rate >= 0) || p.Rate > attack.MaxRate {
			return armErr(fmt.Sprintf("Phases[%d].Rate", i), "%v is not in [0, %d] requests per second", p.Rate, attack.MaxRate)
		}
		if p.Duration <= 0 {
			return armErr(fmt.Sprintf("Phases[%d].Duration", i), "%v must be greater than zero", p.Duration)
		}
		if total > math.MaxInt64-p.Duration {
			return armErr("Phases", "the phases last longer than %v in all", time.Duration(math.MaxInt64))
		}
		total += p.Duration
	}
	if n := a.PlannedRequests(); n > MaxRequestsPerRun {
		count := fmt.Sprint(n)
		if n == math.MaxInt {
			count = "too many"
		}
		return armErr("Phases", "the phases plan %s requests a run, more than %d (the limit, see docs/limits.md); shorten the phases or lower the rates", count, MaxRequestsPerRun)
	}
	return nil
}
