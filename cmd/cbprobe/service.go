package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cbprobe/cbprobe/collect"
	"github.com/cbprobe/cbprobe/pgsim"
	"github.com/cbprobe/cbprobe/pgsim/behavior"
	"github.com/cbprobe/cbprobe/results"
	"github.com/cbprobe/cbprobe/runner"
	"github.com/cbprobe/cbprobe/service"
)

// serviceFlags are the --service flags of experiment and attack: cbprobe starts
// the user's service for each arm (package service).
type serviceFlags struct {
	command         string
	dir             string
	env             []string
	props           []string
	startTimeout    time.Duration
	stopGrace       time.Duration
	health          string
	gatewayProperty string
}

func (s *serviceFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&s.command, "service", "", "start your service with this shell command for each arm (no --target needed), e.g. 'java -jar app.jar'")
	f.StringVar(&s.dir, "service-dir", "", "working directory of --service (default: the current one)")
	f.StringArrayVar(&s.env, "service-env", nil, "environment variable for --service, KEY=VALUE (repeatable)")
	f.StringArrayVar(&s.props, "service-property", nil, "Spring property for --service, key=value, given in SPRING_APPLICATION_JSON (repeatable)")
	f.DurationVar(&s.startTimeout, "service-start-timeout", service.DefaultStartTimeout, "how long --service may take until its health endpoint says UP")
	f.DurationVar(&s.stopGrace, "service-stop-grace", service.DefaultStopGrace, "time between SIGTERM and SIGKILL when stopping --service")
	f.StringVar(&s.health, "service-health", service.DefaultHealthPath, "health endpoint of --service, polled until it says UP")
	f.StringVar(&s.gatewayProperty, "service-gateway-property", service.DefaultGatewayProperty, "Spring property that gets the URL of cbprobe's payment gateway (pgsim)")
	cmd.MarkFlagsMutuallyExclusive("service", "target")
}

// config returns the service settings given on the command line (only the
// flags actually set, so a spec file's service block fills the rest), nil when
// none was set. On a terminal it shows the service's start on stderr; a second
// Ctrl-C kills the service's process group before cbprobe exits. progress may
// be nil.
func (s *serviceFlags) config(cmd *cobra.Command, g *globalOptions, progress *progressLine) (*service.Config, error) {
	f := cmd.Flags()
	var c service.Config
	any := false
	changed := func(name string) bool {
		if f.Changed(name) {
			any = true
			return true
		}
		return false
	}
	if changed("service") {
		c.Command = s.command
	}
	if changed("service-dir") {
		c.Dir = s.dir
	}
	if changed("service-start-timeout") {
		if s.startTimeout <= 0 {
			return nil, usageErr(fmt.Errorf("--service-start-timeout: %s must be positive", s.startTimeout))
		}
		c.StartTimeout = s.startTimeout
	}
	if changed("service-stop-grace") {
		if s.stopGrace <= 0 {
			return nil, usageErr(fmt.Errorf("--service-stop-grace: %s must be positive", s.stopGrace))
		}
		c.StopGrace = s.stopGrace
	}
	if changed("service-health") {
		c.HealthPath = s.health
	}
	if changed("service-gateway-property") {
		c.GatewayProperty = s.gatewayProperty
	}
	var err error
	if changed("service-env") {
		if c.Env, err = keyValues("--service-env", s.env); err != nil {
			return nil, err
		}
	}
	if changed("service-property") {
		if c.Properties, err = keyValues("--service-property", s.props); err != nil {
			return nil, err
		}
	}
	if !any {
		return nil, nil
	}
	if c.Command != "" || f.Changed("service") {
		if err := c.Validate("--service"); err != nil {
			return nil, err
		}
	}
	if progress == nil {
		progress = &progressLine{w: g.stderr}
	}
	if isTerminal(g.stderr) {
		c.Progress = func(p service.Progress) { progress.showText(p.String()) }
	}
	c.Started = func(p *service.Process) {
		onHardStop(cmd.Context(), p.Kill) // nothing the service started outlives a second Ctrl-C
	}
	return &c, nil
}

func keyValues(flag string, list []string) (map[string]string, error) {
	m := map[string]string{}
	for _, kv := range list {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, usageErr(fmt.Errorf("%s: %q is not KEY=VALUE", flag, kv))
		}
		m[strings.TrimSpace(k)] = v
	}
	return m, nil
}

// showText writes one status line on the terminal.
func (p *progressLine) showText(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprint(p.w, eraseLine+s)
	p.shown = true
}

// attackService runs --service for `cbprobe attack`: start launches cbprobe's
// gateway (pgsim, reference behaviour, on a free loopback port) and the
// service pointed at it; finish stops the service and records it in arm.
type attackService struct {
	cfg     *service.Config
	g       *globalOptions
	dir     string
	gateway *pgsim.Server
	proc    *service.Process
}

func (a *attackService) start(ctx context.Context) (runner.Target, error) {
	gw, err := pgsim.New(pgsim.Config{Behavior: behavior.DefaultBehavior(), Seed: 1, CallbackPrefix: "http"}, a.g.logger)
	if err != nil {
		return runner.Target{}, err
	}
	if err := gw.Start(ctx, "127.0.0.1:0"); err != nil {
		return runner.Target{}, infraErr(fmt.Errorf("start the gateway: %w", err))
	}
	a.gateway = gw
	a.proc, err = service.Start(ctx, a.cfg.ForArm("attack", a.dir, nil, gw.URL()), a.g.logger)
	if err != nil {
		return runner.Target{}, err
	}
	return runner.Target{URL: a.proc.URL(), Speed: 1, Stop: func() { _, _ = a.proc.Stop(context.WithoutCancel(ctx)) }}, nil
}

// finish stops the service (if the runner has not) and the gateway, and
// records the service in arm; the error is the service's fault, if any.
func (a *attackService) finish(ctx context.Context, arm *results.Arm) error {
	var err error
	if a.proc != nil {
		var rec results.Service
		rec, err = a.proc.Stop(context.WithoutCancel(ctx))
		arm.Service = &rec
	}
	if a.gateway != nil {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = a.gateway.Close(c)
	}
	return err
}

// actuatorSource polls the service's own actuator when --service runs without
// a metrics flag.
func actuatorSource(g *globalOptions) func(string, collect.Clock) (collect.Source, error) {
	return func(target string, _ collect.Clock) (collect.Source, error) {
		return collect.NewActuator(target, collect.HTTPOptions{Logger: g.logger}), nil
	}
}
