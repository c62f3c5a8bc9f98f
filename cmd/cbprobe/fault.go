package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cbprobe/cbprobe/fault"
	"github.com/cbprobe/cbprobe/pgsim/behavior"
	"github.com/spf13/cobra"
)

// faultOptions are the flags of `cbprobe fault`.
type faultOptions struct {
	upstream      string
	stub          string
	listen        string
	rules         string
	errorRate     float64
	errorStatus   int
	errorBody     string
	latency       string
	slow          bool
	slowLatency   string
	errorTiming   string
	hangRate      float64
	hangMax       time.Duration
	resetRate     float64
	truncateRate  float64
	malformedRate float64
	seed          int64
	logPath       string
	correlation   []string
	maxBody       int64
	metricsPath   string
}

func newFaultCommand(g *globalOptions) *cobra.Command {
	o := &faultOptions{}
	def := fault.NoFaults()
	cmd := &cobra.Command{
		Use:   "fault --upstream URL | --stub FILE",
		Short: "Inject errors, latency and connection faults into any HTTP dependency (127.0.0.1:8090)",
		Long: `fault is a reverse proxy in front of any HTTP dependency (--upstream) or a stub
that answers from a route file (--stub). Per request it applies pgsim's behaviour
model: an error share with a chosen status and body, connection faults (reset, hang,
truncated or malformed answers), latency distributions and slow mode, optionally
scoped by method and path and changing over time (--rules FILE with phases). Rules
are read per request, so a change reaches live keep-alive connections at once.

Every attempt is logged with its route, outcome, injected fault and a correlation key
(the traceparent's trace-id, else X-Request-Id), so attempts per logical request are
counted as with pgsim. While it runs: GET/PUT/PATCH /__fault/behavior, GET/PUT
/__fault/rules, GET /__fault/stats and /__fault/attempts, POST /__fault/reset, and
Prometheus metrics on /metrics. Ctrl-C stops it. See docs/fault.md.

Latency distributions: 200ms (fixed), 100ms-500ms (uniform), normal:mean=200ms,sd=50ms,
lognormal:median=200ms,p99=1s, list:100ms,150ms,900ms.`,
		Example: `  cbprobe fault --upstream http://127.0.0.1:8082 --error-rate 0.4 --latency 100ms-500ms
  cbprobe fault --upstream https://sandbox.example.com --listen 127.0.0.1:9000 --rules rules.yaml
  cbprobe fault --stub routes.yaml --slow --seed 1 --log attempts.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runFault(cmd, g, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.upstream, "upstream", "", "base URL of the dependency to proxy (http or https)")
	f.StringVar(&o.stub, "stub", "", "YAML route file to answer from instead of an upstream")
	f.StringVar(&o.listen, "listen", "127.0.0.1:8090", "address to listen on (port 0 picks a free port)")
	f.StringVar(&o.rules, "rules", "", "YAML file of rules scoped by method and path, with phases over time")
	f.Float64Var(&o.errorRate, "error-rate", 0, "probability in [0, 1] that a request gets an injected error")
	f.IntVar(&o.errorStatus, "error-status", def.ErrorStatus, "HTTP status of an injected error (200..599)")
	f.StringVar(&o.errorBody, "error-body", def.ErrorBody, "body of an injected error (JSON content type when it starts with { or [)")
	f.StringVar(&o.latency, "latency", "0s", "latency distribution added to each request")
	f.BoolVar(&o.slow, "slow", false, "slow mode: every request takes --slow-latency, no errors")
	f.StringVar(&o.slowLatency, "slow-latency", def.SlowLatency.String(), "latency distribution in slow mode")
	f.StringVar(&o.errorTiming, "error-timing", def.ErrorTiming.String(), "when an error, reset or malformed answer comes: immediate, or after-latency")
	f.Float64Var(&o.hangRate, "hang-rate", 0, "probability that a request never gets an answer (held until the client gives up or --hang-max)")
	f.DurationVar(&o.hangMax, "hang-max", def.HangMax, "longest a hanging request is held")
	f.Float64Var(&o.resetRate, "reset-rate", 0, "probability that the connection is reset instead of answered")
	f.Float64Var(&o.truncateRate, "truncate-rate", 0, "probability that the answer is cut short of its Content-Length")
	f.Float64Var(&o.malformedRate, "malformed-rate", 0, "probability that the client gets bytes that are not HTTP")
	f.Int64Var(&o.seed, "seed", 0, "random seed; the same seed and request order give the same decisions (0 = random)")
	f.StringVar(&o.logPath, "log", "", "append every attempt as a JSON line to this file")
	f.StringSliceVar(&o.correlation, "correlation-header", fault.DefaultCorrelationHeaders(), "headers tried in order for an attempt's correlation key (traceparent uses its trace-id)")
	f.Int64Var(&o.maxBody, "max-body", fault.DefaultMaxBody, "cap on request and response bodies, in bytes")
	f.StringVar(&o.metricsPath, "metrics-path", fault.DefaultMetricsPath, "path of the Prometheus metrics (not forwarded); move it if the upstream has its own")
	return cmd
}

// faultFlagFor maps a behaviour field to its flag.
func faultFlagFor(field string) string {
	switch field {
	case "errorStatus":
		return "error-status"
	case "errorBody":
		return "error-body"
	case "truncateRate":
		return "truncate-rate"
	case "malformedRate":
		return "malformed-rate"
	}
	return flagFor(field)
}

// faultConfig turns the flags into a fault.Config; every error is a usage error.
func faultConfig(cmd *cobra.Command, o *faultOptions) (fault.Config, error) {
	cfg := fault.Config{Upstream: o.upstream, Seed: o.seed, LogPath: o.logPath, CorrelationHeaders: o.correlation,
		MaxBody: o.maxBody, MetricsPath: o.metricsPath}
	switch {
	case o.upstream == "" && o.stub == "":
		return cfg, usageErr(errors.New("give --upstream URL or --stub FILE"))
	case o.upstream != "" && o.stub != "":
		return cfg, usageErr(errors.New("give --upstream URL or --stub FILE, not both"))
	case o.maxBody <= 0:
		return cfg, usageErr(fmt.Errorf("--max-body: %d: want > 0 bytes", o.maxBody))
	}
	if o.upstream != "" {
		if _, err := fault.ParseUpstream(o.upstream); err != nil {
			return cfg, usageErr(fmt.Errorf("--upstream: %w", err))
		}
	}
	if o.stub != "" {
		st, err := fault.LoadStub(o.stub)
		if err != nil {
			return cfg, usageErr(fmt.Errorf("--stub: %w", err))
		}
		cfg.Stub = st
	}
	if o.rules != "" {
		rules, err := fault.LoadRulesFile(o.rules)
		if err != nil {
			return cfg, usageErr(fmt.Errorf("--rules: %w", err))
		}
		cfg.Rules = rules
	}
	b := fault.NoFaults()
	b.ErrorRate, b.ErrorStatus, b.ErrorBody = o.errorRate, o.errorStatus, o.errorBody
	b.Slow, b.HangRate, b.HangMax, b.ResetRate = o.slow, o.hangRate, o.hangMax, o.resetRate
	b.TruncateRate, b.MalformedRate = o.truncateRate, o.malformedRate
	for _, d := range []struct {
		flag, val string
		dst       *behavior.Distribution
	}{{"latency", o.latency, &b.Latency}, {"slow-latency", o.slowLatency, &b.SlowLatency}} {
		dist, err := behavior.ParseDistribution(d.val)
		if err != nil {
			return cfg, usageErr(fmt.Errorf("--%s: %w", d.flag, err))
		}
		*d.dst = dist
	}
	t, err := behavior.ParseErrorTiming(o.errorTiming)
	if err != nil {
		return cfg, usageErr(fmt.Errorf("--error-timing: %w", err))
	}
	b.ErrorTiming = t
	if err := b.Validate(); err != nil {
		var fe *behavior.FieldError
		if errors.As(err, &fe) {
			return cfg, usageErr(fmt.Errorf("--%s: %s", faultFlagFor(fe.Field), fe.Msg))
		}
		return cfg, usageErr(err)
	}
	cfg.Behavior = b
	return cfg, nil
}

func runFault(cmd *cobra.Command, g *globalOptions, o *faultOptions) error {
	cfg, err := faultConfig(cmd, o)
	if err != nil {
		return err
	}
	srv, err := fault.New(cfg, g.logger)
	if err != nil {
		return usageErr(err)
	}
	ctx := cmd.Context()
	if err := srv.Start(ctx, o.listen); err != nil {
		_ = srv.Close(context.Background())
		return infraErr(err)
	}
	out := g.stdout
	c := srv.Config()
	target := "upstream " + c.Upstream
	if c.Stub != nil {
		target = fmt.Sprintf("stub %s (%d routes)", c.Stub.File, len(c.Stub.Routes))
	}
	fmt.Fprintf(out, "fault listening on %s -> %s (seed %d)\n", srv.URL(), target, srv.Seed())
	fmt.Fprintf(out, "  default behaviour: %s\n", c.Behavior)
	for _, r := range c.Rules {
		fmt.Fprintf(out, "  rule %s %s: %d phase(s), first: %s\n", orStar(r.Method), orAny(r.Path), len(r.Phases), r.Phases[0].Behavior)
	}
	fmt.Fprintf(out, "  correlation: %s\n", strings.Join(c.CorrelationHeaders, ", then "))
	if c.LogPath != "" {
		fmt.Fprintf(out, "  attempt log: %s\n", c.LogPath)
	}
	fmt.Fprintf(out, "  control: %s/__fault/behavior | rules | stats | attempts | POST reset; metrics: %s%s\n", srv.URL(), srv.URL(), c.MetricsPath)
	fmt.Fprintln(out, "Press Ctrl-C to stop.")

	<-ctx.Done()
	closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st := srv.AttemptStats()
	cerr := srv.Close(closeCtx)
	fmt.Fprintf(out, "fault stopped: %d attempts on %d correlation keys (mean %.2f per key), %d without a key; outcomes %v\n",
		st.Total, st.Keys, st.Mean, st.Unkeyed, st.Outcomes)
	if cerr != nil {
		return infraErr(fmt.Errorf("stop fault: %w", cerr))
	}
	return nil
}

func orStar(s string) string {
	if s == "" {
		return "*"
	}
	return s
}

func orAny(s string) string {
	if s == "" {
		return "/**"
	}
	return s
}
