package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/cbprobe/cbprobe/pgsim"
	"github.com/cbprobe/cbprobe/pgsim/behavior"
	"github.com/spf13/cobra"
)

// pgsimOptions are the flags of `cbprobe pgsim`.
type pgsimOptions struct {
	listen          string
	config          string
	errorRate       float64
	latency         string
	slow            bool
	slowLatency     string
	errorTiming     string
	hangRate        float64
	hangMax         time.Duration
	resetRate       float64
	seed            int64
	logPath         string
	callbackPrefix  string
	callbackWorkers int
	speed           float64
	controlToken    string
	maxConns        int
}

func newPgsimCommand(g *globalOptions) *cobra.Command {
	o := &pgsimOptions{}
	def := pgsim.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "pgsim",
		Short: "Run the payment-gateway simulator (drop-in for pg-simulator) on 127.0.0.1:8082",
		Long: `pgsim serves the pg-simulator API (POST /api/v1/payments, GET /api/v1/payments/{key},
GET /api/v1/payments?orderId=) with the same envelope, Korean messages and validation
order. By default 40 % of payment calls fail at once with HTTP 500 and the others answer
after a uniform 100–500 ms, as the field report describes. Accepted payments settle after
1–5 s (70 % SUCCESS, 20 % limit, 10 % invalid card) and are posted to their callbackUrl.

Settings come from the defaults, then --config FILE (YAML), then the flags given.
While it runs, GET/PUT/PATCH /__pgsim/behavior reads or changes the behaviour,
GET /__pgsim/stats and /__pgsim/attempts show the attempt log, POST /__pgsim/reset clears
it and /metrics serves Prometheus metrics. Ctrl-C stops it.

Latency distributions: 200ms (fixed), 100ms-500ms (uniform), normal:mean=200ms,sd=50ms,
lognormal:median=200ms,p99=1s, list:100ms,150ms,900ms.`,
		Example: `  cbprobe pgsim --seed 1
  cbprobe pgsim --slow
  cbprobe pgsim --error-rate 0.2 --latency lognormal:median=150ms,p99=800ms --callback-prefix http://127.0.0.1:8080
  cbprobe pgsim --config pgsim.yaml --log attempts.jsonl
  cbprobe pgsim --listen 0.0.0.0:8082 --control-token "$TOKEN"   # reachable from other hosts`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPgsim(cmd, g, o)
		},
	}
	f := cmd.Flags()
	db := def.Behavior
	f.StringVar(&o.listen, "listen", "127.0.0.1:8082", "address to listen on (port 0 picks a free port)")
	f.StringVar(&o.config, "config", "", "YAML file with settings (flags given on the command line win)")
	f.Float64Var(&o.errorRate, "error-rate", db.ErrorRate, "probability in [0, 1] that a payment call fails with HTTP 500")
	f.StringVar(&o.latency, "latency", db.Latency.String(), "latency distribution of payment calls")
	f.BoolVar(&o.slow, "slow", false, "slow mode: every call takes --slow-latency, no errors")
	f.StringVar(&o.slowLatency, "slow-latency", db.SlowLatency.String(), "latency distribution in slow mode")
	f.StringVar(&o.errorTiming, "error-timing", db.ErrorTiming.String(), "when a failing call answers: immediate, or after-latency (the original's order)")
	f.Float64Var(&o.hangRate, "hang-rate", 0, "probability that a call never answers (held until the client gives up or --hang-max)")
	f.DurationVar(&o.hangMax, "hang-max", db.HangMax, "longest a hanging call is held")
	f.Float64Var(&o.resetRate, "reset-rate", 0, "probability that the connection is reset instead of answered")
	f.Int64Var(&o.seed, "seed", 0, "random seed; the same seed and request order give the same outcomes (0 = random)")
	f.StringVar(&o.logPath, "log", "", "append every payment attempt as a JSON line to this file")
	f.StringVar(&o.callbackPrefix, "callback-prefix", def.CallbackPrefix, "prefix every callbackUrl must start with")
	f.IntVar(&o.callbackWorkers, "callback-workers", def.CallbackWorkers, "at most this many goroutines post settlement callbacks (started as the backlog needs them)")
	f.Float64Var(&o.speed, "speed", 1, "time compression: >1 divides every injected latency and settlement delay")
	f.StringVar(&o.controlToken, "control-token", "", "require this token in the "+pgsim.ControlTokenHeader+" header of /__pgsim/ requests (needed for the control API when --listen is not a loopback address)")
	f.IntVar(&o.maxConns, "max-conns", pgsim.DefaultMaxConns, "most simultaneous client connections; more wait until one closes")
	return cmd
}

// pgsimConfig merges defaults, the config file and the flags that were set.
func pgsimConfig(cmd *cobra.Command, o *pgsimOptions) (pgsim.Config, error) {
	cfg := pgsim.DefaultConfig()
	if o.config != "" {
		var err error
		if cfg, err = pgsim.LoadConfigFile(o.config, cfg); err != nil {
			return cfg, usageErr(err)
		}
	}
	set := cmd.Flags().Changed
	b := cfg.Behavior
	if set("error-rate") {
		b.ErrorRate = o.errorRate
	}
	for _, d := range []struct {
		flag string
		val  string
		dst  *behavior.Distribution
	}{{"latency", o.latency, &b.Latency}, {"slow-latency", o.slowLatency, &b.SlowLatency}} {
		if !set(d.flag) {
			continue
		}
		dist, err := behavior.ParseDistribution(d.val)
		if err != nil {
			return cfg, usageErr(fmt.Errorf("--%s: %w", d.flag, err))
		}
		*d.dst = dist
	}
	if set("slow") {
		b.Slow = o.slow
	}
	if set("error-timing") {
		t, err := behavior.ParseErrorTiming(o.errorTiming)
		if err != nil {
			return cfg, usageErr(fmt.Errorf("--error-timing: %w", err))
		}
		b.ErrorTiming = t
	}
	if set("hang-rate") {
		b.HangRate = o.hangRate
	}
	if set("hang-max") {
		b.HangMax = o.hangMax
	}
	if set("reset-rate") {
		b.ResetRate = o.resetRate
	}
	if err := b.Validate(); err != nil {
		var fe *behavior.FieldError
		if errors.As(err, &fe) {
			return cfg, usageErr(fmt.Errorf("--%s: %s", flagFor(fe.Field), fe.Msg))
		}
		return cfg, usageErr(err)
	}
	cfg.Behavior = b
	if set("seed") {
		cfg.Seed = o.seed
	}
	if set("log") {
		cfg.LogPath = o.logPath
	}
	if set("callback-prefix") {
		cfg.CallbackPrefix = o.callbackPrefix
	}
	if set("callback-workers") {
		if o.callbackWorkers < 1 || o.callbackWorkers > pgsim.MaxCallbackWorkers {
			return cfg, usageErr(fmt.Errorf("--callback-workers: %d: want 1 to %d (see docs/limits.md)", o.callbackWorkers, pgsim.MaxCallbackWorkers))
		}
		cfg.CallbackWorkers = o.callbackWorkers
	}
	if set("control-token") {
		cfg.ControlToken = o.controlToken
	}
	if set("max-conns") {
		if o.maxConns < 1 {
			return cfg, usageErr(fmt.Errorf("--max-conns: %d: want >= 1", o.maxConns))
		}
		cfg.Limits.MaxConns = o.maxConns
	}
	if set("speed") {
		if !(o.speed > 0) {
			return cfg, usageErr(fmt.Errorf("--speed: %v: want a number > 0", o.speed))
		}
		cfg.Speed = o.speed
	}
	return cfg, nil
}

// flagFor maps a behaviour field to its flag.
func flagFor(field string) string {
	switch field {
	case "errorRate":
		return "error-rate"
	case "slowLatency":
		return "slow-latency"
	case "errorTiming":
		return "error-timing"
	case "hangRate":
		return "hang-rate"
	case "hangMax":
		return "hang-max"
	case "resetRate":
		return "reset-rate"
	}
	return field
}

func runPgsim(cmd *cobra.Command, g *globalOptions, o *pgsimOptions) error {
	cfg, err := pgsimConfig(cmd, o)
	if err != nil {
		return err
	}
	srv, err := pgsim.New(cfg, g.logger)
	if err != nil {
		return usageErr(err)
	}
	ctx := cmd.Context()
	if err := srv.Start(ctx, o.listen); err != nil {
		_ = srv.Close(context.Background())
		return infraErr(err)
	}
	c := srv.Config()
	out := g.stdout
	fmt.Fprintf(out, "pgsim listening on %s (seed %d)\n", srv.URL(), srv.Seed())
	fmt.Fprintf(out, "  behaviour: %s\n", c.Behavior)
	fmt.Fprintf(out, "  callbacks: callbackUrl must start with %s; %d workers; settlement after 1s-5s", c.CallbackPrefix, c.CallbackWorkers)
	if c.Speed != 1 {
		fmt.Fprintf(out, "; speed x%g", c.Speed)
	}
	fmt.Fprintln(out)
	if c.LogPath != "" {
		fmt.Fprintf(out, "  attempt log: %s\n", c.LogPath)
	}
	fmt.Fprintf(out, "  control: %s/__pgsim/behavior | /__pgsim/stats | /__pgsim/attempts | POST /__pgsim/reset; metrics: %s/metrics\n", srv.URL(), srv.URL())
	if u, err := url.Parse(srv.URL()); err == nil && !isLoopbackHost(u.Hostname()) {
		if c.ControlToken == "" {
			fmt.Fprintf(g.stderr, "warning: pgsim listens on %s, not a loopback address: anyone who can reach it can use it; the control API is refused until you restart with --control-token TOKEN\n", u.Host)
		} else {
			fmt.Fprintf(g.stderr, "warning: pgsim listens on %s, not a loopback address: anyone who can reach it can use it; the control API needs the header %s\n", u.Host, pgsim.ControlTokenHeader)
		}
	}
	fmt.Fprintln(out, "Press Ctrl-C to stop.")

	<-ctx.Done()
	closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st := srv.Stats()
	cerr := srv.Close(closeCtx)
	fmt.Fprintf(out, "pgsim stopped: %d payment attempts on %d orders (mean %.2f per order), %d transactions, %d callbacks sent, %d failed\n",
		st.Attempts.Total, st.Attempts.Orders, st.Attempts.Mean, st.Transactions, st.CallbacksSent, st.CallbacksFailed)
	if cerr != nil {
		return infraErr(fmt.Errorf("stop pgsim: %w", cerr))
	}
	return nil
}

// isLoopbackHost reports whether host (an IP or "localhost") is a loopback address.
func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
