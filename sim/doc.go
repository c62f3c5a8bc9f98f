// Package sim is the virtual-time twin of one experiment arm: a discrete-event
// simulation of the load (open-model phases or sequential users), the service's
// Retry(CircuitBreaker(TimeLimiter(gateway call))) and the payment gateway.
//
// Nothing sleeps and no goroutine runs per call. Events (arrivals, gateway
// attempts, their completions, request ends) sit in one queue ordered by virtual
// time, ties by scheduling order, so calls overlap as they would in a real run.
// The breaker is breaker.CircuitBreaker on a breaker.VirtualClock, driven with
// TryAcquirePermission / OnSuccess / OnError at the simulated instants; the
// gateway is pgsim's own model (behavior.Behavior.Decide). The Retry and
// TimeLimiter control flow is simulated as events using RetryConfig.Interval,
// RetryConfig.ShouldRetry and the TimeLimiter's timeout.
//
// Run simulates one run; Predict runs many in parallel, reproducibly (run i
// uses RunSeed(seed, i) and results are aggregated in run order), and returns
// percentile bands, OPEN causes, per-phase shares, attempts per request against
// the closed form, the exact half-open pass probability and the median run.
package sim
