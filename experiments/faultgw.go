package experiments

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/cbprobe/cbprobe/fault"
	"github.com/cbprobe/cbprobe/pgsim"
	"github.com/cbprobe/cbprobe/pgsim/behavior"
)

// The gateways an arm's payments can go to (Options.Gateway).
const (
	// GatewayPgsim is cbprobe's pg-simulator deciding every payment's outcome (the default).
	GatewayPgsim = "pgsim"
	// GatewayFault is `cbprobe fault` in front of a pg-simulator that answers
	// every payment at once and successfully: the proxy injects the spec's
	// errors and latency, the way it would in front of any dependency.
	GatewayFault = "fault"
)

// gateway is what an arm changes and reads on the gateway its service calls.
type gateway interface {
	// URL is the base URL the service is given.
	URL() string
	// SetBehavior changes the outcomes of the payments from now on.
	SetBehavior(b behavior.Behavior) error
	// ResetStats clears the attempt log before the load starts.
	ResetStats()
	// Attempts returns the attempt log, keyed by order id, and its summary.
	Attempts() (pgsim.AttemptStats, []pgsim.Attempt)
}

// pgsimGateway is pgsim deciding the outcomes itself.
type pgsimGateway struct{ *pgsim.Server }

// Attempts returns pgsim's own attempt log.
func (g pgsimGateway) Attempts() (pgsim.AttemptStats, []pgsim.Attempt) {
	return g.Stats().Attempts, g.Server.Attempts()
}

// gatewayPlan is what an experiment's payments go to, resolved once per run
// from --gateway and the spec's gateway block.
type gatewayPlan struct {
	kind     string       // GatewayPgsim ("") or GatewayFault
	upstream string       // fault in front of this URL; "" and no stub: cbprobe's pgsim
	stub     *fault.Stub  // fault answering from routes instead of an upstream
	rules    []fault.Rule // behaviours scoped by method and path, before the arm's default
}

// faultGateway is fault's proxy in front of an upstream: by default a pgsim
// that only accepts payments (nil when fault proxies the spec's upstream or
// answers from a stub).
type faultGateway struct {
	upstream *pgsim.Server
	proxy    *fault.Server
}

// passThrough is the upstream pgsim's behaviour: every payment accepted at once.
func passThrough() behavior.Behavior {
	b := behavior.DefaultBehavior()
	b.ErrorRate, b.Latency, b.HangRate, b.ResetRate = 0, behavior.Fixed{}, 0, 0
	return b
}

// startFaultGateway starts fault, injecting b, on listen: in front of gp's
// upstream, answering from gp's stub, or (neither set) in front of a pgsim on a
// free loopback port that accepts every payment at once. The proxy keys
// attempts by the X-Request-Id the service sends with each payment (the order
// id, the same on every retry), then traceparent.
func startFaultGateway(ctx context.Context, gp gatewayPlan, b behavior.Behavior, seed int64, callbackPrefix, listen string, log *slog.Logger) (*faultGateway, error) {
	g := &faultGateway{}
	cfg := fault.Config{Upstream: gp.upstream, Stub: gp.stub, Rules: gp.rules, Behavior: fault.Behavior{Behavior: b}, Seed: seed,
		CorrelationHeaders: []string{"X-Request-Id", "traceparent"}}
	if gp.upstream == "" && gp.stub == nil {
		up, err := pgsim.New(pgsim.Config{Behavior: passThrough(), Seed: seed, CallbackPrefix: callbackPrefix}, log)
		if err != nil {
			return nil, err
		}
		if err := up.Start(ctx, "127.0.0.1:0"); err != nil {
			return nil, &RunError{Op: "start the gateway behind fault", Err: err}
		}
		g.upstream, cfg.Upstream = up, up.URL()
	}
	proxy, err := fault.New(cfg, log)
	if err == nil {
		err = proxy.Start(ctx, listen)
	}
	if err != nil {
		if g.upstream != nil {
			closeWithin(g.upstream.Close)
		}
		return nil, &RunError{Op: "start cbprobe fault on " + listen, Err: err}
	}
	g.proxy = proxy
	return g, nil
}

// URL is the proxy's.
func (g *faultGateway) URL() string { return g.proxy.URL() }

// SetBehavior changes what the proxy injects.
func (g *faultGateway) SetBehavior(b behavior.Behavior) error {
	return g.proxy.SetBehavior(fault.Behavior{Behavior: b})
}

// ResetStats clears the attempt logs.
func (g *faultGateway) ResetStats() {
	g.proxy.ResetStats()
	if g.upstream != nil {
		g.upstream.ResetStats()
	}
}

// faultOutcome is pgsim's name for the proxy's outcome, so attempts are
// analysed alike whichever gateway an arm used.
func faultOutcome(o string) string {
	switch o {
	case fault.OutcomeSuccess:
		return pgsim.OutcomeSuccess
	case fault.OutcomeError, fault.OutcomeTruncate, fault.OutcomeMalformed:
		return pgsim.OutcomeError
	case fault.OutcomeHang:
		return pgsim.OutcomeHang
	case fault.OutcomeReset:
		return pgsim.OutcomeReset
	case fault.OutcomeRejected:
		return pgsim.OutcomeRejected
	}
	return o
}

// Attempts returns the proxy's attempt log and summary in pgsim's form: the
// correlation key (the service's X-Request-Id) stands for the order id.
func (g *faultGateway) Attempts() (pgsim.AttemptStats, []pgsim.Attempt) {
	fs := g.proxy.AttemptStats()
	st := pgsim.AttemptStats{Orders: fs.Keys, Attempts: fs.Attempts, Mean: fs.Mean, Histogram: fs.Histogram,
		DroppedOrders: fs.DroppedKeys, Total: fs.Total, Logged: fs.Logged, DroppedAttempts: fs.DroppedAttempts,
		Outcomes: map[string]int{}}
	for o, n := range fs.Outcomes {
		st.Outcomes[faultOutcome(o)] += n
	}
	log := g.proxy.Attempts()
	out := make([]pgsim.Attempt, len(log))
	for i, a := range log {
		out[i] = pgsim.Attempt{Time: a.Time, OrderID: a.Key, Outcome: faultOutcome(a.Outcome), Injected: a.Injected, N: a.N}
	}
	return st, out
}

// Close stops the proxy, then pgsim.
func (g *faultGateway) Close(ctx context.Context) error {
	err := g.proxy.Close(ctx)
	if err != nil {
		err = fmt.Errorf("close cbprobe fault: %w", err)
	}
	if g.upstream != nil {
		if uerr := g.upstream.Close(ctx); err == nil {
			err = uerr
		}
	}
	return err
}
