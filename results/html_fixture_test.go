package results

import (
	"fmt"
	"time"
)

// richRecord is the sample run with every series the report draws: the
// COUNT_BASED arm sends 15/s for 5 s, pauses 15 s and sends 5/s for 8 s;
// before its OPEN at +2 s its requests succeed or fail (HTTP 500 and
// timeouts), after it they are rejected; it has samples and the service's
// breaker, Retry and TimeLimiter events. The TIME_BASED arm (from +30 s,
// 25 requests a second) has requests only: its breaker, window, Retry and TimeLimiter panels have
// nothing recorded. An expectation failed, so the run failed.
func richRecord() *Record {
	run := sampleRun()
	run.Complete = true
	rec := &Record{Run: *run}
	seq := 0
	add := func(arm, phase string, at time.Time, i int) Request {
		seq++
		r := Request{Arm: arm, Seq: seq, Phase: phase, Intended: at, Sent: at.Add(time.Millisecond),
			Latency: time.Duration(100+(i*37)%400) * time.Millisecond, Status: 200, Outcome: OutcomeSucceeded}
		rec.Requests = append(rec.Requests, r)
		return r
	}
	event := func(at time.Time, kind, typ, msg string) {
		rec.Events = append(rec.Events, Event{Time: at, Arm: "COUNT_BASED", Kind: kind, Breaker: "pgCircuit", Type: typ, Message: msg})
	}
	rec.Events = append(rec.Events, Event{Time: t0(), Arm: "COUNT_BASED", Kind: "phase", Message: "attack started"})
	for i := range 75 + 40 {
		phase, at := "phase1", t0().Add(time.Duration(i)*time.Second/15)
		if i >= 75 {
			phase, at = "phase3", t0().Add(20*time.Second+time.Duration(i-75)*time.Second/5)
		}
		add("COUNT_BASED", phase, at, i)
		r := &rec.Requests[len(rec.Requests)-1]
		switch {
		case at.Sub(t0()) >= 2*time.Second:
			r.Status, r.Outcome, r.Error = 503, OutcomeRejected, "pay: 503 Service Unavailable"
			event(at, "circuitbreaker", "NOT_PERMITTED", "")
			event(at, "retry", "IGNORED_ERROR", "io.github.resilience4j.circuitbreaker.CallNotPermittedException: CircuitBreaker 'pgCircuit' is OPEN")
		case i%5 == 1:
			r.Status, r.Outcome, r.Error = 500, OutcomeFailed, "pay: 500 Internal Server Error"
			event(at, "circuitbreaker", "ERROR", "feign.FeignException$InternalServerError: [500 Internal Server Error]")
			event(at, "timelimiter", "ERROR", "feign.FeignException$InternalServerError: [500 Internal Server Error]")
			event(at, "retry", "RETRY", "feign.FeignException$InternalServerError: [500 Internal Server Error]")
			event(at, "retry", "ERROR", "feign.FeignException$InternalServerError: [500 Internal Server Error]")
		case i%5 == 3:
			r.Status, r.Outcome, r.Error = 0, OutcomeFailed, "pay: context deadline exceeded (Client.Timeout exceeded)"
			event(at, "circuitbreaker", "ERROR", "java.util.concurrent.TimeoutException: TimeLimiter 'pgCircuit' recorded a timeout exception.")
			event(at, "timelimiter", "TIMEOUT", "")
			event(at, "retry", "RETRY", "java.util.concurrent.TimeoutException")
		default:
			event(at, "circuitbreaker", "SUCCESS", "")
			event(at, "timelimiter", "SUCCESS", "")
			if i%5 == 4 {
				event(at, "retry", "SUCCESS", "")
			}
		}
	}
	rec.Events = append(rec.Events, Event{Time: t0().Add(3 * time.Second), Arm: "COUNT_BASED", Kind: "lost-events", Breaker: "pgCircuit",
		Message: "the service's event buffer (100) may have dropped events"})
	for i := range 75 {
		add("TIME_BASED", "phase1", t0().Add(30*time.Second+time.Duration(i)*time.Second/25), i)
	}
	for i := range 57 {
		at := t0().Add(time.Duration(i) * 500 * time.Millisecond)
		st, fr, sr := "CLOSED", Unknown, Unknown
		switch {
		case i >= 24:
			st, fr, sr = "HALF_OPEN", 0, 0
		case i >= 4:
			st, fr, sr = "OPEN", 40, 60
		case i >= 2:
			fr, sr = 35, 45
		}
		rec.Samples = append(rec.Samples, Sample{Arm: "COUNT_BASED", Time: at, Source: "actuator", Breaker: "pgCircuit", State: st,
			FailureRate: fr, SlowCallRate: sr, FailureRateThreshold: 60, SlowCallRateThreshold: 50,
			Buffered: float64(min(i*4, 20)), Failed: float64(min(i*2, 8)), Slow: float64(min(i*3, 12)), NotPermitted: float64(max(0, i-4) * 3)})
	}
	return rec
}

// withVerdict returns the sample run changed to reach verdict v.
func withVerdict(v string) *Run {
	run := sampleRun()
	run.Complete = true
	switch v {
	case VerdictPassed:
		run.Expectations[1].OK = true
	case VerdictInconclusive:
		run.Expectations[1] = Expectation{Expr: "arm[TIME_BASED].opens>=1", Inconclusive: true, Message: "the breaker was not observed"}
	case VerdictIncomplete:
		run.Complete, run.Interrupted, run.Reason = false, true, "interrupted by SIGINT"
	case VerdictFailed:
	default:
		panic(fmt.Sprintf("no sample run for verdict %q", v))
	}
	return run
}
