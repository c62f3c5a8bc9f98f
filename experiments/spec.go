package experiments

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/cbprobe/cbprobe/fault"
	"github.com/cbprobe/cbprobe/service"
	"github.com/cbprobe/cbprobe/sim"
)

//go:embed specs/*.yaml
var embeddedSpecs embed.FS

// Spec is an experiment file: traffic, gateway behaviour, configuration, arms and
// expectations. The named experiments (slow-call, window-type, retry) are Specs
// embedded in the binary; `cbprobe experiment show NAME` prints one.
type Spec struct {
	// Name identifies the experiment in run directories and reports.
	Name string `yaml:"name"`
	// Title is a one-line statement of what the experiment shows.
	Title string `yaml:"title"`
	// Traffic is the load every arm receives.
	Traffic Traffic `yaml:"traffic"`
	// Gateway is pgsim's behaviour for every arm and phase unless overridden.
	Gateway Gateway `yaml:"gateway"`
	// GatewayPhases changes the gateway's behaviour when a phase starts (1-based phase
	// number → the fields that change), e.g. slow mode from phase 2 on.
	GatewayPhases map[int]Gateway `yaml:"gateway-phases"`
	// Config is "reference" (DESIGN.md's reference setting, the default) or the path of
	// a Spring Boot application.yml/.properties, relative to the spec file.
	Config string `yaml:"config"`
	// Service sets the reference service's own settings for every arm.
	Service Service `yaml:"service"`
	// Arms run one after the other, each against a fresh gateway and service.
	Arms []Arm `yaml:"arms"`
	// Expect lists expectations in the --expect grammar.
	Expect []string `yaml:"expect"`
	// Replicas is the number of service replicas behind the target's load
	// balancer, each with its own breaker (0 or 1: one instance; at most
	// sim.MaxReplicas). The prediction models them (sim.Arm.Replicas); a run
	// with more than one needs --target, the load balancer's URL (CheckFleetTarget).
	Replicas int `yaml:"replicas"`
	// Balance is the load balancer's policy across Replicas: "round-robin" (the
	// default) or "random" (sim.ParseBalance).
	Balance string `yaml:"balance"`

	// Dir is the folder relative paths are resolved against ("" for embedded specs).
	Dir string `yaml:"-"`
	// Source is the file name, or "embedded:NAME".
	Source string `yaml:"-"`
}

// Traffic is either open-model phases or sequential users.
type Traffic struct {
	// Phases uses the shared phase syntax, e.g. "15/s:5s,0/s:15s,5/s:8s".
	Phases string `yaml:"phases"`
	// Sequential runs users that each send requests back to back.
	Sequential *Sequential `yaml:"sequential"`
	// Flow is the path of a request-flow YAML file; empty means the reference
	// service's order + payment flow.
	Flow string `yaml:"flow"`
}

// Sequential is the closed-model traffic of the retry experiment.
type Sequential struct {
	// Users is the number of concurrent users (>= 1).
	Users int `yaml:"users"`
	// Requests is the number of flow runs per user (>= 1).
	Requests int `yaml:"requests"`
	// Think is the pause between a user's requests, e.g. "100ms".
	Think string `yaml:"think"`
}

// Gateway is pgsim's behaviour, with the same names as `cbprobe pgsim` flags. Nil
// pointers and empty strings leave the inherited value unchanged.
type Gateway struct {
	// ErrorRate is the probability in [0, 1] that a call fails.
	ErrorRate *float64 `yaml:"error-rate"`
	// Latency is the distribution of successful calls, e.g. "100ms-500ms".
	Latency string `yaml:"latency"`
	// ErrorTiming is "immediate" or "after-latency".
	ErrorTiming string `yaml:"error-timing"`
	// Slow turns slow mode on or off.
	Slow *bool `yaml:"slow"`
	// SlowLatency is the latency distribution in slow mode (default 150ms-300ms).
	SlowLatency string `yaml:"slow-latency"`
	// HangRate is the probability in [0, 1] that a call hangs.
	HangRate *float64 `yaml:"hang-rate"`
	// ResetRate is the probability in [0, 1] that the connection is reset.
	ResetRate *float64 `yaml:"reset-rate"`

	// Kind is what applies the behaviour: "pgsim" (the default) decides the
	// payments itself; "fault" is cbprobe fault injecting it in front of Upstream,
	// or answering from Stub. Top-level gateway only; --gateway overrides it.
	Kind string `yaml:"kind"`
	// Upstream, with kind fault, is the dependency's base URL fault stands in
	// front of; empty means cbprobe's pgsim accepting every payment at once.
	Upstream string `yaml:"upstream"`
	// Stub, with kind fault, is a route file (relative to the spec) fault answers
	// from instead of any upstream (docs/fault.md, stub mode).
	Stub string `yaml:"stub"`
	// Rules, with kind fault, is a rules file (relative to the spec): behaviours
	// scoped by method and path, with phases (docs/fault.md). Requests no rule
	// matches get the behaviour above, which is what the prediction models.
	Rules string `yaml:"rules"`
}

// choosesGateway reports whether the fields that choose the gateway are set.
func (g Gateway) choosesGateway() bool {
	return g.Kind != "" || g.Upstream != "" || g.Stub != "" || g.Rules != ""
}

// Merge returns g with every field that o sets replaced by o's.
func (g Gateway) Merge(o Gateway) Gateway {
	if o.ErrorRate != nil {
		g.ErrorRate = o.ErrorRate
	}
	if o.Latency != "" {
		g.Latency = o.Latency
	}
	if o.ErrorTiming != "" {
		g.ErrorTiming = o.ErrorTiming
	}
	if o.Slow != nil {
		g.Slow = o.Slow
	}
	if o.SlowLatency != "" {
		g.SlowLatency = o.SlowLatency
	}
	if o.HangRate != nil {
		g.HangRate = o.HangRate
	}
	if o.ResetRate != nil {
		g.ResetRate = o.ResetRate
	}
	return g
}

// Service holds the reference service's own settings (the `pg.*` keys of its
// application.yml). Nil fields keep the configuration's value. At the top level
// it may also say how to start your service for each arm (command, dir, env,
// start-timeout, stop-grace, health, gateway-property: see service.Spec).
type Service struct {
	// Spec starts your service for each arm, like --service (top level only).
	service.Spec `yaml:",inline"`
	// RetryMaxAttempts counts the first call (pg.retry-max-attempts).
	RetryMaxAttempts *int `yaml:"retry-max-attempts"`
	// RetryWait is the wait between attempts (pg.retry-wait), e.g. "0s".
	RetryWait string `yaml:"retry-wait"`
	// RetryOnRejection retries a call the open breaker rejected (pg.retry-on-rejection).
	RetryOnRejection *bool `yaml:"retry-on-rejection"`
	// DBLatency is the simulated database work per transaction, e.g. "3ms".
	DBLatency string `yaml:"db-latency"`
}

// Merge returns s with every field that o sets replaced by o's.
func (s Service) Merge(o Service) Service {
	if o.RetryMaxAttempts != nil {
		s.RetryMaxAttempts = o.RetryMaxAttempts
	}
	if o.RetryWait != "" {
		s.RetryWait = o.RetryWait
	}
	if o.RetryOnRejection != nil {
		s.RetryOnRejection = o.RetryOnRejection
	}
	if o.DBLatency != "" {
		s.DBLatency = o.DBLatency
	}
	return s
}

// Arm is one side of an experiment.
type Arm struct {
	// Name identifies the arm in arm[NAME] expectations and reports.
	Name string `yaml:"name"`
	// Description says what differs in this arm.
	Description string `yaml:"description"`
	// Gateway overrides the experiment's gateway behaviour for this arm.
	Gateway Gateway `yaml:"gateway"`
	// Service overrides the experiment's service settings for this arm.
	Service Service `yaml:"service"`
	// Properties are Spring properties (dotted kebab keys) that override the
	// configuration for this arm, e.g. resilience4j.timelimiter.configs.default.timeout-duration.
	Properties map[string]string `yaml:"properties"`
	// Reported holds a published measurement to show beside cbprobe's, keyed by
	// expectation metric (first-rejected-request, rejected, phase[3].success, ...);
	// shares are fractions in [0, 1].
	Reported map[string]float64 `yaml:"reported"`
}

// SpecError reports a malformed spec; it maps to exit code 2.
type SpecError struct {
	Source string
	Line   int
	Msg    string
}

func (e *SpecError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Source, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Source, e.Msg)
}

// ExitCode is 2: a bad spec is a usage error.
func (e *SpecError) ExitCode() int { return 2 }

// Names lists the embedded experiments, sorted.
func Names() []string {
	entries, err := embeddedSpecs.ReadDir("specs")
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(names)
	return names
}

// NamedSource returns the YAML text of an embedded experiment.
func NamedSource(name string) ([]byte, error) {
	data, err := embeddedSpecs.ReadFile("specs/" + name + ".yaml")
	if err != nil {
		return nil, &SpecError{Source: "experiment " + name, Msg: fmt.Sprintf("no such experiment (known: %s)", strings.Join(Names(), ", "))}
	}
	return data, nil
}

// Named parses an embedded experiment.
func Named(name string) (*Spec, error) {
	data, err := NamedSource(name)
	if err != nil {
		return nil, err
	}
	return ParseSpec("embedded:"+name, data)
}

// LoadSpec reads and parses a spec file.
func LoadSpec(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &SpecError{Source: path, Msg: fmt.Sprintf("read: %v", err)}
	}
	s, err := ParseSpec(path, data)
	if err != nil {
		return nil, err
	}
	s.Dir = filepath.Dir(path)
	return s, nil
}

// ParseSpec parses spec YAML strictly: unknown keys are errors naming the line.
func ParseSpec(source string, data []byte) (*Spec, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var s Spec
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &SpecError{Source: source, Msg: "empty spec: no YAML document (want name, traffic and arms; `cbprobe experiment show retry` prints an example)"}
		}
		var te *yaml.TypeError
		if errors.As(err, &te) {
			msgs := make([]string, len(te.Errors))
			for i, m := range te.Errors {
				msgs[i] = friendlyYAMLError(m)
			}
			return nil, &SpecError{Source: source, Msg: strings.Join(msgs, "; ")}
		}
		return nil, &SpecError{Source: source, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	s.Source = source
	if err := s.validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// friendlyYAMLError rewrites the decoder's "field x not found in type
// experiments.Arm" as `unknown key "x"`, keeping the line prefix.
func friendlyYAMLError(m string) string {
	i := strings.Index(m, "field ")
	j := strings.Index(m, " not found in type ")
	if i < 0 || j < i {
		return m
	}
	return m[:i] + fmt.Sprintf("unknown key %q", m[i+len("field "):j])
}

func (s *Spec) validate() error {
	bad := func(format string, a ...any) error {
		return &SpecError{Source: s.Source, Msg: fmt.Sprintf(format, a...)}
	}
	if s.Name == "" {
		return bad("name: missing")
	}
	switch {
	case s.Traffic.Phases == "" && s.Traffic.Sequential == nil:
		return bad("traffic: set phases or sequential")
	case s.Traffic.Phases != "" && s.Traffic.Sequential != nil:
		return bad("traffic: set phases or sequential, not both")
	case s.Traffic.Sequential != nil && (s.Traffic.Sequential.Users < 1 || s.Traffic.Sequential.Requests < 1):
		return bad("traffic.sequential: users and requests must be at least 1")
	case s.Traffic.Sequential != nil && (s.Traffic.Sequential.Users > sim.MaxRequestsPerRun || s.Traffic.Sequential.Requests > sim.MaxRequestsPerRun/s.Traffic.Sequential.Users):
		return bad("traffic.sequential: %d users × %d requests is more than %d requests an arm (the limit, see docs/limits.md)", s.Traffic.Sequential.Users, s.Traffic.Sequential.Requests, sim.MaxRequestsPerRun)
	case s.Traffic.Sequential != nil && len(s.GatewayPhases) > 0:
		return bad("gateway-phases: needs traffic.phases")
	}
	if s.Traffic.Sequential != nil && s.Traffic.Sequential.Think != "" {
		d, err := time.ParseDuration(s.Traffic.Sequential.Think)
		if err != nil {
			return bad("traffic.sequential.think: %q is not a duration", s.Traffic.Sequential.Think)
		}
		if d < 0 {
			return bad("traffic.sequential.think: %q is negative (want a pause of 0s or more)", s.Traffic.Sequential.Think)
		}
	}
	if len(s.Arms) == 0 {
		return bad("arms: at least one arm is needed")
	}
	seen := map[string]bool{}
	for i, a := range s.Arms {
		if a.Name == "" {
			return bad("arms[%d].name: missing", i)
		}
		if strings.ContainsAny(a.Name, "[]. ") {
			return bad("arms[%d].name: %q may not contain '[', ']', '.' or spaces", i, a.Name)
		}
		if seen[a.Name] {
			return bad("arms[%d].name: %q is used twice", i, a.Name)
		}
		seen[a.Name] = true
		if !a.Service.Spec.IsZero() {
			return bad("arms[%d].service: command, dir, env, start-timeout, stop-grace, health and gateway-property belong in the top-level service block", i)
		}
	}
	if _, err := s.Service.Spec.Config(""); err != nil {
		return bad("%v", err)
	}
	for n, g := range s.GatewayPhases {
		if n < 1 {
			return bad("gateway-phases: phase %d: phases are numbered from 1", n)
		}
		if g.choosesGateway() {
			return bad("gateway-phases: phase %d: kind, upstream, stub and rules belong in the top-level gateway", n)
		}
	}
	for i, a := range s.Arms {
		if a.Gateway.choosesGateway() {
			return bad("arms[%d].gateway: kind, upstream, stub and rules belong in the top-level gateway", i)
		}
	}
	switch g := s.Gateway; {
	case g.Kind != "" && g.Kind != GatewayPgsim && g.Kind != GatewayFault:
		return bad("gateway.kind: %q is not pgsim or fault", g.Kind)
	case g.Kind != GatewayFault && (g.Upstream != "" || g.Stub != "" || g.Rules != ""):
		return bad("gateway: upstream, stub and rules need kind: fault")
	case g.Upstream != "" && g.Stub != "":
		return bad("gateway: set upstream or stub, not both")
	case g.Upstream != "":
		if _, err := fault.ParseUpstream(g.Upstream); err != nil {
			return bad("gateway.upstream: %v", err)
		}
	}
	if s.Replicas < 0 || s.Replicas > sim.MaxReplicas {
		return bad("replicas: %d is not in [0, %d] (0 or 1: one instance)", s.Replicas, sim.MaxReplicas)
	}
	if _, err := sim.ParseBalance(s.Balance); err != nil {
		return bad("balance: %v", err)
	}
	if s.Config == "" {
		s.Config = "reference"
	}
	for _, e := range s.Expect {
		if _, err := ParseExpectation(e); err != nil {
			return bad("expect: %v", err)
		}
	}
	return nil
}

// CheckFleetTarget refuses to run a fleet spec (replicas > 1) without a target:
// the embedded reference service (and a --service command) is one instance, so
// its breaker could not be compared with a prediction for several. The error is
// a *SpecError (exit 2) naming --target; "" target means the embedded setup.
func (s *Spec) CheckFleetTarget(target string) error {
	if s.Replicas <= 1 || target != "" {
		return nil
	}
	return &SpecError{Source: s.Source, Msg: fmt.Sprintf("replicas: %d: fleet runs need --target, the URL of the load balancer in front of your %d replicas, for now; "+
		"the embedded service is one instance (`cbprobe predict --replicas %d` predicts the fleet without running it)", s.Replicas, s.Replicas, s.Replicas)}
}

// Path resolves a path written in the spec (flow:, config:): an absolute path
// is used as it is, a relative one is relative to the spec's folder.
func (s *Spec) Path(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(s.Dir, p)
}

// Arm returns the arm with that name.
func (s *Spec) Arm(name string) (Arm, bool) {
	for _, a := range s.Arms {
		if a.Name == name {
			return a, true
		}
	}
	return Arm{}, false
}
