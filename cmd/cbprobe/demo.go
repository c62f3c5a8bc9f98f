package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/cbprobe/cbprobe/demo"
	"github.com/cbprobe/cbprobe/springconf"
)

type demoOptions struct {
	config     string
	listen     string
	pgURL      string
	seed       int64
	speed      float64
	promFormat string
	boot4      bool
	dbLatency  string
	zone       string
}

func newDemoCommand(g *globalOptions) *cobra.Command {
	o := &demoOptions{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the reference target service (orders and payments behind a Resilience4j breaker)",
		Long: `demo runs the reference target service: a Go emulation of a Spring Boot 3 commerce
service with resilience4j-spring-boot3, Spring Cloud OpenFeign and micrometer. It creates
orders (POST /api/v1/orders), pays them (POST /api/v1/payments) through the payment
gateway behind Retry(CircuitBreaker(TimeLimiter(call))), and exposes the actuator
endpoints and /actuator/prometheus exactly as the Spring service would.

The breaker is named as OpenFeign names it, PgPaymentClient#requestPayment(String,PaymentRequest),
so application.yml applies (or not) exactly as in Spring. Without --config the embedded
reference application.yml is used; without --pg-url (or pg.base-url) an embedded pgsim
gateway is started on a free loopback port.

--speed N runs every timed thing N times faster: gateway latencies, database work,
TimeLimiter and retry waits, the breaker's open wait, slow-call comparison and TIME_BASED
seconds. Durations are measured on the same scaled clock.`,
		Example: `  cbprobe demo
  cbprobe demo --config application.yml --pg-url http://127.0.0.1:8082
  cbprobe demo --speed 10 --seed 7 --prometheus-format legacy`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDemo(cmd.Context(), g, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.config, "config", "", "application.yml/.properties to use (default: the embedded reference setting)")
	f.StringVar(&o.listen, "listen", "127.0.0.1:8080", "address to listen on")
	f.StringVar(&o.pgURL, "pg-url", "", "payment gateway base URL (default: pg.base-url, else an embedded pgsim)")
	f.Int64Var(&o.seed, "seed", 0, "seed of the embedded gateway and the retry's random waits (0: random)")
	f.Float64Var(&o.speed, "speed", 1, "run every timed thing this many times faster")
	f.StringVar(&o.promFormat, "prometheus-format", "current", "/actuator/prometheus generation: current (Spring Boot >= 3.3) or legacy (<= 3.2)")
	f.BoolVar(&o.boot4, "boot4", false, "answer the actuator as Spring Boot 4 does (stateTransition as \"State transition from CLOSED to OPEN\", liveness and readiness health probes)")
	f.StringVar(&o.dbLatency, "db-latency", "", "simulated database work per transaction, e.g. 3ms or 0 for none (default: demo.db-latency, else 3ms)")
	f.StringVar(&o.zone, "zone", "", "JVM default zone of event times, e.g. Asia/Seoul or +09:00 (default: demo.time-zone, else Etc/UTC)")
	return cmd
}

func runDemo(ctx context.Context, g *globalOptions, o *demoOptions) error {
	pf, err := demo.ParsePromFormat(o.promFormat)
	if err != nil {
		return usageErr(fmt.Errorf("--prometheus-format: %w", err))
	}
	if o.speed <= 0 {
		return usageErr(fmt.Errorf("--speed %v: want a number > 0", o.speed))
	}
	cfg := demo.Config{ConfigPath: o.config, PGBaseURL: o.pgURL, Seed: o.seed, Speed: o.speed, PromFormat: pf, Zone: o.zone, Boot4: o.boot4}
	if o.dbLatency != "" {
		d, err := springconf.ParseDuration(o.dbLatency)
		if err != nil || d < 0 {
			return usageErr(fmt.Errorf("--db-latency %q: want a duration such as 3ms, or 0", o.dbLatency))
		}
		cfg.DBLatency = d
		if d == 0 {
			cfg.DBLatency = demo.NoDBLatency
		}
	}
	svc, err := demo.New(cfg, g.logger)
	if err != nil {
		return configOrUsage(err)
	}
	if err := svc.Start(ctx, o.listen); err != nil {
		var ec exitCoder
		if errors.As(err, &ec) {
			return err
		}
		return infraErr(err)
	}
	base := svc.URL()
	out := g.stdout
	fmt.Fprintf(out, "demo service listening on %s (speed %gx, prometheus format %s)\n", base, svc.Speed(), pf)
	if svc.Gateway() != nil {
		fmt.Fprintf(out, "embedded payment gateway (pgsim) on %s\n", svc.GatewayURL())
	} else {
		fmt.Fprintf(out, "payment gateway: %s\n", svc.GatewayURL())
	}
	fmt.Fprintf(out, "circuit breaker: %s\n\n", demo.FeignName)
	for _, l := range svc.Endpoints() {
		fmt.Fprintf(out, "  %-7s %s%s\n", l.Method, base, l.Path)
	}
	fmt.Fprintln(out, "\nPress Ctrl-C to stop.")
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := svc.Close(stopCtx); err != nil {
		return infraErr(err)
	}
	fmt.Fprintln(out, "demo service stopped")
	return nil
}

// configOrUsage keeps an error's own exit code and marks the others as usage errors.
func configOrUsage(err error) error {
	var ec exitCoder
	if errors.As(err, &ec) {
		return err
	}
	return usageErr(err)
}
