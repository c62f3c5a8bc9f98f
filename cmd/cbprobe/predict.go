package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cbprobe/cbprobe/attack"
	"github.com/cbprobe/cbprobe/breaker"
	"github.com/cbprobe/cbprobe/pgsim/behavior"
	"github.com/cbprobe/cbprobe/sim"
	"github.com/cbprobe/cbprobe/springconf"
)

type predictOptions struct {
	config, name, retryName           string
	errorRate                         float64
	latency, slowLatency, errorTiming string
	slow                              bool
	hangRate, resetRate               float64
	hangMax                           string
	timelimiter                       string
	retry                             int
	retryOnRejection, startOpen       bool
	windowType                        string
	windowSize, minCalls              int
	phases                            string
	sequential, users                 int
	think, dbLatency, callOverhead    string
	runs                              int
	replicas                          int
	balance                           string
	seed                              uint64
	jsonOut                           bool
}

func newPredictCommand(g *globalOptions) *cobra.Command {
	o := &predictOptions{}
	cmd := &cobra.Command{
		Use:   "predict",
		Short: "Predict an experiment arm in virtual time (many simulated runs)",
		Long: `predict simulates one experiment arm many times on a virtual clock: the load
(open-model phases or sequential users), the service's Retry(CircuitBreaker(TimeLimiter(call)))
built from application.yml with the same breaker code cbprobe uses everywhere, and the
gateway decided by pgsim's own model. Nothing sleeps; 1000 runs take well under a second.

It reports, over the runs: how often and when each breaker transition happens; the
request (1-based, in send order) at which the breaker first opened and first rejected
(5th/50th/95th percentile and mean); the share of first OPENs by cause (failure-rate,
slow-call-rate, both); rejected and success shares per phase; gateway attempts per
request beside the closed form (1 − p^n)/(1 − p); the exact probability that a HALF_OPEN
trial closes the breaker; notes on the mechanisms; and the median run's timeline.

With --replicas N the service runs as N replicas behind a load balancer (--balance
round-robin or random), each with its own breaker, window, Retry and TimeLimiter, the
gateway shared. The report then adds one row per replica (its first OPEN by fleet and by
its own request number, causes, refused share, time OPEN) and the fleet's view: how many
replicas were OPEN over time, per phase, beside the share refused at the entry point.

The same --seed gives the same output whatever the number of CPUs.`,
		Example: `  cbprobe predict --sequential 40 --retry 3
  cbprobe predict --sequential 40 --retry 1 --runs 2000 --json
  cbprobe predict --phases '15/s:5s,0/s:15s,5/s:8s' --window-type TIME_BASED --window-size 10
  cbprobe predict --config application.yml --slow --timelimiter 1000ms --phases 15/s:40s
  cbprobe predict --phases '15/s:5s,0/s:15s,5/s:8s' --replicas 3 --balance random`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPredict(cmd, g, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.config, "config", "", "Spring application.yml/.properties to read the breaker, TimeLimiter and Retry from (default: the reference setting)")
	f.StringVar(&o.name, "name", springconf.DefaultBreakerName, "circuit breaker (and TimeLimiter) name to resolve in the config")
	f.StringVar(&o.retryName, "retry-name", "", "Retry instance name to resolve (default: --name)")
	f.Float64Var(&o.errorRate, "error-rate", 0.40, "gateway: probability in [0,1] that a call fails with HTTP 500")
	f.StringVar(&o.latency, "latency", "100ms-500ms", "gateway: latency distribution (200ms, 100ms-500ms, normal:mean=200ms,sd=50ms, lognormal:median=200ms,p99=1s, list:100ms,900ms)")
	f.BoolVar(&o.slow, "slow", false, "gateway: slow mode, every call takes --slow-latency and none fails")
	f.StringVar(&o.slowLatency, "slow-latency", "150ms-300ms", "gateway: latency distribution in slow mode")
	f.StringVar(&o.errorTiming, "error-timing", "immediate", "gateway: when a failing call answers: immediate or after-latency")
	f.Float64Var(&o.hangRate, "hang-rate", 0, "gateway: probability in [0,1] that a call hangs (held --hang-max)")
	f.StringVar(&o.hangMax, "hang-max", "30s", "gateway: how long a hanging call is held")
	f.Float64Var(&o.resetRate, "reset-rate", 0, "gateway: probability in [0,1] that the connection is reset")
	f.StringVar(&o.timelimiter, "timelimiter", "", "TimeLimiter timeout (e.g. 600ms, 1s), overrides the config; \"off\" for none")
	f.IntVar(&o.retry, "retry", 0, "Retry max attempts (first call included), overrides the config (pg.retry-max-attempts, else the retry's max-attempts)")
	f.BoolVar(&o.retryOnRejection, "retry-on-rejection", false, "retry an attempt the breaker rejected (CallNotPermitted), overrides the config's pg.retry-on-rejection (default false: a rejection ends the request as CIRCUIT_OPEN)")
	f.BoolVar(&o.startOpen, "start-open", false, "start with the breaker OPEN and its wait elapsed, as left open by an earlier run")
	f.StringVar(&o.windowType, "window-type", "", "sliding window type COUNT_BASED or TIME_BASED, overrides the config")
	f.IntVar(&o.windowSize, "window-size", 0, "sliding window size (calls or seconds), overrides the config")
	f.IntVar(&o.minCalls, "min-calls", 0, "minimum number of calls, overrides the config")
	f.StringVar(&o.phases, "phases", "", "open-model traffic, e.g. '15/s:5s,0/s:15s,5/s:8s' (rate 0 = pause)")
	f.IntVar(&o.sequential, "sequential", 40, "closed-model traffic: requests per user, sent back to back (ignored with --phases)")
	f.IntVar(&o.users, "users", 1, "closed-model traffic: number of users")
	f.StringVar(&o.think, "think", "0s", "closed-model traffic: pause between one user's requests")
	f.StringVar(&o.dbLatency, "db-latency", springconf.DefaultDBLatency.String(), "the service's own work per DB step (3 per request: order, payment before and after the gateway call), overrides the config's demo.db-latency")
	f.StringVar(&o.callOverhead, "call-overhead", sim.DefaultCallOverhead.String(), "HTTP round trip added to every gateway call's measured duration")
	f.IntVar(&o.runs, "runs", 1000, "number of simulated runs")
	f.IntVar(&o.replicas, "replicas", 1, fmt.Sprintf("service replicas behind the load balancer, each with its own breaker (1..%d)", sim.MaxReplicas))
	f.StringVar(&o.balance, "balance", "round-robin", "load balancing across --replicas: round-robin or random")
	f.Uint64Var(&o.seed, "seed", 1, "seed; run i uses a seed derived from (seed, i)")
	f.BoolVar(&o.jsonOut, "json", false, "write the prediction as JSON")
	return cmd
}

func runPredict(cmd *cobra.Command, g *globalOptions, o *predictOptions) error {
	arm, err := o.arm(cmd)
	if err != nil {
		return usageErr(err)
	}
	if o.runs < 1 {
		return usageErr(fmt.Errorf("--runs: %d must be at least 1", o.runs))
	}
	g.logger.Debug("predict", "runs", o.runs, "seed", o.seed, "requests", arm.PlannedRequests())
	p, err := sim.Predict(cmd.Context(), arm, o.runs, o.seed)
	if err != nil {
		if cmd.Context().Err() != nil {
			return err
		}
		return usageErr(err)
	}
	if p.RequestedRuns > 0 {
		fmt.Fprintf(g.stderr, "cbprobe predict: ran %d of the %d runs asked for: %d requests a run, at most %d simulated in all (see docs/limits.md)\n",
			p.Runs, p.RequestedRuns, p.Requests, sim.MaxPredictRequests)
	}
	if o.jsonOut {
		enc := json.NewEncoder(g.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(p); err != nil {
			return infraErr(fmt.Errorf("write prediction: %w", err))
		}
		return nil
	}
	if err := writePrediction(g.stdout, &arm, &p); err != nil {
		return infraErr(fmt.Errorf("write prediction: %w", err))
	}
	return nil
}

// arm builds the simulated arm from the config and the flags; errors name the flag or key.
func (o *predictOptions) arm(cmd *cobra.Command) (sim.Arm, error) {
	file, err := springconf.LoadOrReference(o.config)
	if err != nil {
		return sim.Arm{}, fmt.Errorf("--config: %w", err)
	}
	svc, err := file.ResolveService(o.name, o.retryName)
	if err != nil {
		return sim.Arm{}, fmt.Errorf("--config: %w", err)
	}
	// The same conversion `experiment` makes; the flags below override it.
	arm := sim.ServiceArm(o.name, svc)
	cfg := arm.Breaker
	arm.StartOpen = o.startOpen
	changed := cmd.Flags().Changed
	if changed("retry-on-rejection") {
		arm.RetryOnRejection = o.retryOnRejection
	}
	if changed("timelimiter") {
		if strings.EqualFold(o.timelimiter, "off") {
			arm.TimeLimiter = nil
		} else {
			d, err := springconf.ParseDuration(o.timelimiter)
			if err != nil || d < 0 {
				return sim.Arm{}, fmt.Errorf("--timelimiter: %q is not a duration such as 600ms or 1s (or off)", o.timelimiter)
			}
			arm.TimeLimiter.TimeoutDuration = d
		}
	}
	if changed("retry") {
		if o.retry < 1 {
			return sim.Arm{}, fmt.Errorf("--retry: %d must be at least 1 (it counts the first attempt)", o.retry)
		}
		arm.Retry.MaxAttempts = o.retry
	}
	if o.windowType != "" {
		wt, err := breaker.ParseWindowType(o.windowType)
		if err != nil {
			return sim.Arm{}, fmt.Errorf("--window-type: %w", err)
		}
		cfg.SlidingWindowType = wt
	}
	if changed("window-size") {
		if o.windowSize < 1 {
			return sim.Arm{}, fmt.Errorf("--window-size: %d must be at least 1", o.windowSize)
		}
		cfg.SlidingWindowSize = o.windowSize
	}
	if changed("min-calls") {
		if o.minCalls < 1 {
			return sim.Arm{}, fmt.Errorf("--min-calls: %d must be at least 1", o.minCalls)
		}
		cfg.MinimumNumberOfCalls = o.minCalls
	}
	if err := cfg.Validate(); err != nil {
		return sim.Arm{}, fmt.Errorf("circuit breaker config: %w", err)
	}
	arm.Breaker = cfg

	gw, err := o.gateway()
	if err != nil {
		return sim.Arm{}, err
	}
	arm.Gateway = gw
	if changed("db-latency") {
		if arm.DBLatency, err = behavior.ParseDistribution(o.dbLatency); err != nil {
			return sim.Arm{}, fmt.Errorf("--db-latency: %w", err)
		}
	}
	if changed("call-overhead") {
		if arm.CallOverhead, err = predictDuration("--call-overhead", o.callOverhead); err != nil {
			return sim.Arm{}, err
		}
	}
	if o.phases != "" {
		if arm.Phases, err = attack.ParsePhases(o.phases); err != nil {
			return sim.Arm{}, fmt.Errorf("--phases: %w", err)
		}
	} else {
		if o.sequential < 1 {
			return sim.Arm{}, fmt.Errorf("--sequential: %d must be at least 1", o.sequential)
		}
		if o.users < 1 {
			return sim.Arm{}, fmt.Errorf("--users: %d must be at least 1", o.users)
		}
		if o.users > sim.MaxRequestsPerRun || o.sequential > sim.MaxRequestsPerRun/o.users {
			return sim.Arm{}, fmt.Errorf("--users %d × --sequential %d: more than %d requests a run (the limit, see docs/limits.md)", o.users, o.sequential, sim.MaxRequestsPerRun)
		}
		arm.Users, arm.RequestsPerUser = o.users, o.sequential
		if arm.Think, err = predictDuration("--think", o.think); err != nil {
			return sim.Arm{}, err
		}
	}
	if o.replicas < 1 || o.replicas > sim.MaxReplicas {
		return sim.Arm{}, fmt.Errorf("--replicas: %d is not in [1, %d]", o.replicas, sim.MaxReplicas)
	}
	arm.Replicas = o.replicas
	if arm.Balance, err = sim.ParseBalance(o.balance); err != nil {
		return sim.Arm{}, fmt.Errorf("--balance: %w", err)
	}
	if n := arm.PlannedRequests(); !arm.Sequential() && n > sim.MaxRequestsPerRun {
		return sim.Arm{}, fmt.Errorf("--phases %q: plans %d requests a run, more than %d (the limit, see docs/limits.md); shorten the phases or lower the rates", o.phases, n, sim.MaxRequestsPerRun)
	}
	if err := arm.Validate(); err != nil {
		return sim.Arm{}, err
	}
	return arm, nil
}

func (o *predictOptions) gateway() (behavior.Behavior, error) {
	b := behavior.DefaultBehavior()
	for _, p := range []struct {
		flag string
		v    float64
	}{{"--error-rate", o.errorRate}, {"--hang-rate", o.hangRate}, {"--reset-rate", o.resetRate}} {
		if math.IsNaN(p.v) || p.v < 0 || p.v > 1 {
			return b, fmt.Errorf("%s: %v is not a probability in [0, 1]", p.flag, p.v)
		}
	}
	b.ErrorRate, b.HangRate, b.ResetRate, b.Slow = o.errorRate, o.hangRate, o.resetRate, o.slow
	var err error
	if b.Latency, err = behavior.ParseDistribution(o.latency); err != nil {
		return b, fmt.Errorf("--latency: %w", err)
	}
	if b.SlowLatency, err = behavior.ParseDistribution(o.slowLatency); err != nil {
		return b, fmt.Errorf("--slow-latency: %w", err)
	}
	if b.ErrorTiming, err = behavior.ParseErrorTiming(o.errorTiming); err != nil {
		return b, fmt.Errorf("--error-timing: %w", err)
	}
	if b.HangMax, err = predictDuration("--hang-max", o.hangMax); err != nil {
		return b, err
	}
	if err := b.Validate(); err != nil {
		return b, fmt.Errorf("gateway flags: %w", err)
	}
	return b, nil
}

func predictDuration(flag, s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s: %q is not a non-negative duration such as 2ms or 1s", flag, s)
	}
	return d, nil
}

// writePrediction prints the terminal report.
func writePrediction(w io.Writer, arm *sim.Arm, p *sim.Prediction) error {
	ew := &predictWriter{w: w}
	cfg := arm.Breaker
	tl := "none"
	if arm.TimeLimiter != nil {
		tl = arm.TimeLimiter.TimeoutDuration.String()
	}
	traffic := fmt.Sprintf("%d user(s) × %d sequential requests", arm.Users, arm.RequestsPerUser)
	if !arm.Sequential() {
		traffic = attack.FormatPhases(arm.Phases)
	}
	fmt.Fprintf(ew, "Prediction: %d runs, seed %d, %d requests per run\n", p.Runs, p.Seed, p.Requests)
	fmt.Fprintf(ew, "  breaker   %s %d, failure ≥ %v%%, slow > %v at ≥ %v%%, min calls %d, open %v, half-open %d\n",
		cfg.SlidingWindowType, cfg.SlidingWindowSize, cfg.FailureRateThreshold, cfg.SlowCallDurationThreshold,
		cfg.SlowCallRateThreshold, cfg.MinimumNumberOfCalls, cfg.WaitDurationInOpenState, cfg.PermittedNumberOfCallsInHalfOpenState)
	fmt.Fprintf(ew, "  service   Retry %d attempt(s) (retry on rejection: %v), TimeLimiter %s, DB %v per step\n",
		arm.Retry.MaxAttempts, arm.RetryOnRejection, tl, arm.DBLatency)
	fmt.Fprintf(ew, "  gateway   %s\n  traffic   %s\n", arm.Gateway, traffic)
	if arm.Fleet() {
		fmt.Fprintf(ew, "  fleet     %d replicas behind %s balancing, one breaker each; the tables below are the entry point's\n", arm.Replicas, arm.Balance)
	}
	fmt.Fprintln(ew)

	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "REQUEST\tRUNS\tP5\tP50\tP95\tMEAN")
	for _, r := range []struct {
		name string
		b    sim.Band
	}{{"first OPEN", p.FirstOpenRequest}, {"first rejected", p.FirstRejectedRequest}} {
		if r.b.N == 0 {
			fmt.Fprintf(tw, "%s\t0%%\t-\t-\t-\t-\n", r.name)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.0f\t%.0f\t%.2f\n", r.name, predictPct(r.b.Share), r.b.P5, r.b.P50, r.b.P95, r.b.Mean)
	}
	tw.Flush()
	if p.FirstOpenRequest.N > 0 {
		fmt.Fprintf(ew, "\nfirst OPEN by cause: failure-rate %s, slow-call-rate %s, both %s\n\n",
			predictPct(p.OpenCauses[breaker.CauseFailureRate]), predictPct(p.OpenCauses[breaker.CauseSlowCallRate]), predictPct(p.OpenCauses[breaker.CauseBoth]))
	} else {
		fmt.Fprint(ew, "\nfirst OPEN by cause: the breaker never went from CLOSED to OPEN\n\n")
	}

	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TRANSITION\tRUNS\tMEDIAN FIRST AT\tPER RUN")
	for _, t := range p.Transitions {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\n", t.Kind, predictPct(t.Share), predictSeconds(t.MedianFirstAt), t.MeanCount)
	}
	if len(p.Transitions) == 0 {
		fmt.Fprintln(tw, "(none)\t\t\t")
	}
	tw.Flush()

	fmt.Fprintln(ew)
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PHASE\tREQUESTS\tREJECTED\t(5–95%)\tSUCCESS\t(5–95%)\tFAILED")
	for _, ph := range p.Phases {
		if ph.Requests == 0 {
			fmt.Fprintf(tw, "%s\t0\t-\t\t-\t\t-\n", ph.Name)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s–%s\t%s\t%s–%s\t%s\n", ph.Name, ph.Requests, predictPct(ph.RejectedShare),
			predictPct(ph.Rejected.P5), predictPct(ph.Rejected.P95), predictPct(ph.SuccessShare), predictPct(ph.Success.P5), predictPct(ph.Success.P95),
			predictPct(ph.FailedShare))
	}
	fmt.Fprintf(tw, "all\t%d\t%s\t%s–%s\t\t\t\n", p.Requests, predictPct(p.RejectedShare), predictPct(p.RejectedBand.P5), predictPct(p.RejectedBand.P95))
	tw.Flush()

	a := p.AttemptsPerRequest
	fmt.Fprintf(ew, "\ngateway attempts per request: %.3f over all requests, %.3f over requests never rejected; closed form (1 − p^n)/(1 − p) = %.3f (p = %.3f, n = %d)\n",
		a.Mean, a.Unobstructed, a.ClosedForm, a.P, a.MaxAttempts)
	c := p.Gateway.Call
	fmt.Fprintf(ew, "per attempt: fast success %s, slow success %s, fast failure %s, slow failure %s (timeouts %s)\n",
		predictPct(c.FastSuccess), predictPct(c.SlowSuccess), predictPct(c.FastFailure), predictPct(c.SlowFailure), predictPct(p.Gateway.Timeout))
	fmt.Fprintf(ew, "half-open pass probability: %.4g — %s\n", p.HalfOpenPassProbability, p.HalfOpenMeaning)

	if p.Fleet != nil {
		writePredictFleet(ew, p)
	}

	fmt.Fprintln(ew, "\nwhy:")
	for _, n := range p.Notes {
		fmt.Fprintf(ew, "  - %s\n", n)
	}
	writePredictTimeline(ew, p)
	return ew.err
}

// writeTimeline prints the median run: transitions, then one character per request.
func writePredictTimeline(w io.Writer, p *sim.Prediction) {
	r := &p.MedianRun
	fmt.Fprintf(w, "\nmedian run (#%d, replay with seed %d):\n", p.MedianRunIndex, r.Seed)
	for _, t := range r.Transitions {
		line := fmt.Sprintf("  %9s  %-20s", predictSeconds(t.At), t.Kind)
		if t.Instance > 0 {
			line += fmt.Sprintf(" replica %d", t.Instance)
		}
		if t.Request > 0 {
			line += fmt.Sprintf(" at request %d", t.Request)
		}
		if t.Cause != "" {
			line += fmt.Sprintf("  cause %s (failure rate %v%%, slow-call rate %v%%)", t.Cause, t.FailureRate, t.SlowCallRate)
		}
		fmt.Fprintln(w, line)
	}
	if len(r.Transitions) == 0 {
		fmt.Fprintln(w, "  no transitions")
	}
	fmt.Fprintln(w, "  requests ('.' success, 'x' failed, 'o' rejected; one line per phase):")
	var sb strings.Builder
	phase := -1
	flush := func() {
		if sb.Len() > 0 {
			fmt.Fprintf(w, "  %-10s %s\n", r.Phases[phase].Name, sb.String())
			sb.Reset()
		}
	}
	for _, q := range r.RequestLog {
		if q.Phase != phase {
			flush()
			phase = q.Phase
		}
		switch q.Status {
		case sim.StatusSuccess:
			sb.WriteByte('.')
		case sim.StatusFailed:
			sb.WriteByte('x')
		default:
			sb.WriteByte('o')
		}
	}
	flush()
}

func predictPct(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }

func predictSeconds(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }

// predictWriter remembers the first write error.
type predictWriter struct {
	w   io.Writer
	err error
}

func (e *predictWriter) Write(b []byte) (int, error) {
	if e.err != nil {
		return len(b), nil
	}
	n, err := e.w.Write(b)
	if err != nil {
		e.err = fmt.Errorf("write prediction: %w", err)
	}
	return n, nil
}

// writePredictFleet prints the per-replica and fleet tables of a fleet prediction.
func writePredictFleet(w io.Writer, p *sim.Prediction) {
	band := func(b sim.Band) string {
		if b.N == 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f/%.0f/%.0f", b.P5, b.P50, b.P95)
	}
	fmt.Fprintln(w, "\nper replica (request numbers p5/p50/p95; fleet = entry point's send order, own = the replica's own requests):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "REPLICA\tREQUESTS\tOPENED\tFIRST OPEN fleet\town\tFIRST REJECTED fleet\tBY failure/slow/both\tTO OPEN/RUN\tREJECTED\t(5–95%)\tOPEN TIME")
	for _, in := range p.Instances {
		toOpen := 0.0
		for _, t := range in.Transitions {
			if strings.HasSuffix(t.Kind, "_TO_OPEN") {
				toOpen += t.MeanCount
			}
		}
		causes := "-"
		if in.FirstOpenRequest.N > 0 {
			causes = fmt.Sprintf("%s/%s/%s", predictPct(in.OpenCauses[breaker.CauseFailureRate]), predictPct(in.OpenCauses[breaker.CauseSlowCallRate]), predictPct(in.OpenCauses[breaker.CauseBoth]))
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t%s\t%s–%s\t%s\n", in.Instance, band(in.Requests), predictPct(in.FirstOpenRequest.Share),
			band(in.FirstOpenRequest), band(in.FirstOpenLocal), band(in.FirstRejectedRequest), causes, toOpen,
			predictPct(in.RejectedShare), predictPct(in.RejectedBand.P5), predictPct(in.RejectedBand.P95), predictPct(in.OpenShare.Mean))
	}
	tw.Flush()

	f := p.Fleet
	fmt.Fprintf(w, "\nfleet: %d replicas, %s; OPEN replicas on average %.2f (5–95%% %.2f–%.2f), replicas that opened per run %s\n",
		f.Replicas, f.Balance, f.MeanOpen, f.MeanOpenBand.P5, f.MeanOpenBand.P95, band(f.InstancesOpened))
	if p.FirstRejectedRequest.N > 0 {
		fmt.Fprintf(w, "first request refused by any replica: %s (p5/p50/p95, in %s of runs)\n", band(p.FirstRejectedRequest), predictPct(p.FirstRejectedRequest.Share))
	} else {
		fmt.Fprintln(w, "first request refused by any replica: none in any run")
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "OPEN REPLICAS")
	for k := range f.OpenCount {
		fmt.Fprintf(tw, "\t%d", k)
	}
	fmt.Fprint(tw, "\ntime share")
	for _, s := range f.OpenCount {
		fmt.Fprintf(tw, "\t%s", predictPct(s))
	}
	fmt.Fprintln(tw)
	tw.Flush()
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PHASE\tMEAN OPEN\t(5–95%)\tANY OPEN\tALL OPEN\tREFUSED AT ENTRY\t(5–95%)")
	for i, ph := range f.Phases {
		refused, lo, hi := "-", "", ""
		if i < len(p.Phases) && p.Phases[i].Requests > 0 {
			st := p.Phases[i]
			refused, lo, hi = predictPct(st.RejectedShare), predictPct(st.Rejected.P5), predictPct(st.Rejected.P95)
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f–%.2f\t%s\t%s\t%s\t%s–%s\n", ph.Name, ph.MeanOpen, ph.MeanOpenBand.P5, ph.MeanOpenBand.P95,
			predictPct(ph.AnyOpenShare), predictPct(ph.AllOpenShare), refused, lo, hi)
	}
	fmt.Fprintf(tw, "all\t%.2f\t%.2f–%.2f\t\t\t%s\t%s–%s\n", f.MeanOpen, f.MeanOpenBand.P5, f.MeanOpenBand.P95,
		predictPct(p.RejectedShare), predictPct(p.RejectedBand.P5), predictPct(p.RejectedBand.P95))
	tw.Flush()
}
