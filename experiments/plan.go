package experiments

import (
	"fmt"
	"strings"
	"time"

	"github.com/cbprobe/cbprobe/attack"
	"github.com/cbprobe/cbprobe/demo"
	"github.com/cbprobe/cbprobe/pgsim/behavior"
	"github.com/cbprobe/cbprobe/sim"
	"github.com/cbprobe/cbprobe/springconf"
)

// armPlan is one arm resolved from a spec: its configuration, gateway behaviour per
// phase, traffic in real (unscaled) time, and the simulation twin that predicts it.
type armPlan struct {
	arm       Arm
	file      *springconf.File
	settings  demo.Settings
	behaviors []behavior.Behavior // one per phase (one for sequential traffic)
	phases    []attack.Phase      // nil for sequential traffic
	seq       *Sequential
	think     time.Duration
	flow      *attack.Flow
	sim       sim.Arm
	props     map[string]string // every property the arm sets, spec-wide service keys included
	replicas  int               // the spec's replicas (the prediction's only)
	balance   sim.Balance
}

// planArms resolves every selected arm of spec. configPath, when set, replaces the
// spec's configuration.
func planArms(spec *Spec, only, configPath string) ([]armPlan, error) {
	base, err := loadBaseConfig(spec, configPath)
	if err != nil {
		return nil, err
	}
	var phases []attack.Phase
	if spec.Traffic.Phases != "" {
		phases, err = attack.ParsePhases(spec.Traffic.Phases)
		if err != nil {
			return nil, &SpecError{Source: spec.Source, Msg: fmt.Sprintf("traffic.phases: %v", err)}
		}
		if n := (&sim.Arm{Phases: phases}).PlannedRequests(); n > sim.MaxRequestsPerRun {
			return nil, &SpecError{Source: spec.Source, Msg: fmt.Sprintf("traffic.phases: %q plans %d requests an arm, more than %d (the limit, see docs/limits.md); shorten the phases or lower the rates", spec.Traffic.Phases, n, sim.MaxRequestsPerRun)}
		}
		for n := range spec.GatewayPhases {
			if n > len(phases) {
				return nil, &SpecError{Source: spec.Source, Msg: fmt.Sprintf("gateway-phases: phase %d: traffic has %d phases", n, len(phases))}
			}
		}
	}
	var flow *attack.Flow
	if spec.Traffic.Flow != "" {
		flow, err = attack.LoadFlow(spec.Path(spec.Traffic.Flow))
		if err != nil {
			return nil, err
		}
	}
	var plans []armPlan
	for _, a := range spec.Arms {
		if only != "" && a.Name != only {
			continue
		}
		p, err := planArm(spec, a, base, phases, flow)
		if err != nil {
			return nil, err
		}
		plans = append(plans, p)
	}
	if len(plans) == 0 {
		names := make([]string, len(spec.Arms))
		for i, a := range spec.Arms {
			names[i] = a.Name
		}
		return nil, &SpecError{Source: spec.Source, Msg: fmt.Sprintf("--arm %q: no such arm (arms: %s)", only, strings.Join(names, ", "))}
	}
	return plans, nil
}

func loadBaseConfig(spec *Spec, configPath string) (*springconf.File, error) {
	switch {
	case configPath != "":
		return springconf.LoadOrReference(configPath)
	case spec.Config == "" || spec.Config == "reference":
		return springconf.LoadOrReference("")
	default:
		return springconf.LoadOrReference(spec.Path(spec.Config))
	}
}

func planArm(spec *Spec, a Arm, base *springconf.File, phases []attack.Phase, flow *attack.Flow) (armPlan, error) {
	p := armPlan{arm: a, phases: phases, flow: flow, seq: spec.Traffic.Sequential, replicas: spec.Replicas}
	var err error
	if p.balance, err = sim.ParseBalance(spec.Balance); err != nil {
		return armPlan{}, &SpecError{Source: spec.Source, Msg: fmt.Sprintf("balance: %v", err)}
	}
	p.props = serviceProperties(spec.Service.Merge(a.Service))
	for k, v := range a.Properties {
		p.props[k] = v
	}
	file := base
	if len(p.props) > 0 {
		file, err = base.Overlay("arm "+a.Name+" of "+spec.Source, p.props)
		if err != nil {
			return armPlan{}, err
		}
	}
	p.file = file
	settings, err := demo.ResolveSettings(file)
	if err != nil {
		return armPlan{}, err
	}
	p.settings = settings
	gw := spec.Gateway.Merge(a.Gateway)
	first, err := buildBehavior(behavior.DefaultBehavior(), gw)
	if err != nil {
		return armPlan{}, &SpecError{Source: spec.Source, Msg: fmt.Sprintf("arm %s: gateway: %v", a.Name, err)}
	}
	p.behaviors = []behavior.Behavior{first}
	if len(phases) > 0 {
		p.behaviors = make([]behavior.Behavior, len(phases))
		cur := first
		for i := range phases {
			if o, ok := spec.GatewayPhases[i+1]; ok {
				cur, err = buildBehavior(cur, o)
				if err != nil {
					return armPlan{}, &SpecError{Source: spec.Source, Msg: fmt.Sprintf("gateway-phases: phase %d: %v", i+1, err)}
				}
			}
			p.behaviors[i] = cur
		}
	}
	if p.seq != nil && p.seq.Think != "" {
		p.think, _ = time.ParseDuration(p.seq.Think) // validated by ParseSpec
	}
	p.sim = simArm(p)
	if err := p.sim.Validate(); err != nil {
		return armPlan{}, fmt.Errorf("arm %s: simulation: %w", a.Name, err)
	}
	return p, nil
}

// serviceProperties turns the reference service's settings into its pg.* and demo.*
// properties, so the service and the simulation read them the same way.
func serviceProperties(s Service) map[string]string {
	m := map[string]string{}
	if s.RetryMaxAttempts != nil {
		m["pg.retry-max-attempts"] = fmt.Sprint(*s.RetryMaxAttempts)
	}
	if s.RetryWait != "" {
		m["pg.retry-wait"] = s.RetryWait
	}
	if s.RetryOnRejection != nil {
		m["pg.retry-on-rejection"] = fmt.Sprint(*s.RetryOnRejection)
	}
	if s.DBLatency != "" {
		m["demo.db-latency"] = s.DBLatency
	}
	return m
}

// buildBehavior applies the fields g sets to b.
func buildBehavior(b behavior.Behavior, g Gateway) (behavior.Behavior, error) {
	if g.ErrorRate != nil {
		b.ErrorRate = *g.ErrorRate
	}
	if g.Latency != "" {
		d, err := behavior.ParseDistribution(g.Latency)
		if err != nil {
			return b, fmt.Errorf("latency: %w", err)
		}
		b.Latency = d
	}
	if g.ErrorTiming != "" {
		t, err := behavior.ParseErrorTiming(g.ErrorTiming)
		if err != nil {
			return b, fmt.Errorf("error-timing: %w", err)
		}
		b.ErrorTiming = t
	}
	if g.Slow != nil {
		b.Slow = *g.Slow
	}
	if g.SlowLatency != "" {
		d, err := behavior.ParseDistribution(g.SlowLatency)
		if err != nil {
			return b, fmt.Errorf("slow-latency: %w", err)
		}
		b.SlowLatency = d
	}
	if g.HangRate != nil {
		b.HangRate = *g.HangRate
	}
	if g.ResetRate != nil {
		b.ResetRate = *g.ResetRate
	}
	return b, b.Validate()
}

// simArm builds the virtual-time twin of the arm from the same resolved settings
// the reference service runs with (sim.ServiceArm, shared with `predict`).
func simArm(p armPlan) sim.Arm {
	a := sim.ServiceArm(p.arm.Name, p.settings.Service)
	a.Gateway = p.behaviors[0]
	a.Phases = p.phases
	if len(p.phases) > 0 && len(p.behaviors) == len(p.phases) && !allSame(p.behaviors) {
		a.PhaseGateways = p.behaviors
	}
	if p.seq != nil {
		a.Users, a.RequestsPerUser, a.Think = p.seq.Users, p.seq.Requests, p.think
	}
	// The fleet the target's load balancer spreads the load over; only the
	// prediction models it (how the run reads every replica is the runner's).
	a.Replicas, a.Balance = p.replicas, p.balance
	return a
}

func allSame(bs []behavior.Behavior) bool {
	for _, b := range bs[1:] {
		if b.String() != bs[0].String() {
			return false
		}
	}
	return true
}
