package springconf

import (
	"fmt"
	"sort"
	"strings"

	"github.com/cbprobe/cbprobe/breaker"
)

// Sources says where each setting came from: kebab setting name (e.g.
// "failure-rate-threshold") -> the full key path that set it (e.g.
// "resilience4j.circuitbreaker.configs.default.failure-rate-threshold") or "library default".
type Sources map[string]string

// Keys returns the setting names in sorted order.
func (s Sources) Keys() []string {
	out := make([]string, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Resolved is a circuit breaker as Spring would build it for one runtime name.
type Resolved struct {
	// Name is the runtime breaker name asked for.
	Name string
	// Config is the CircuitBreakerConfig; Config.Classify is built from
	// record-exceptions and ignore-exceptions (nil when neither is set).
	Config breaker.Config
	// Sources maps each setting to the key that set it, or "library default".
	Sources Sources
	// MatchedInstance is the instances.<key> (or backends.<key>) as written whose bound name
	// equals Name, "" if none: the breaker is then created lazily from configs.<Name> or
	// configs.default.
	MatchedInstance string
	// RegisterHealthIndicator is register-health-indicator (default false).
	RegisterHealthIndicator bool
	// AllowHealthIndicatorToFail is allow-health-indicator-to-fail (default false).
	AllowHealthIndicatorToFail bool
	// EventConsumerBufferSize is the number of events /actuator/circuitbreakerevents keeps (default 100).
	EventConsumerBufferSize int
	// RecordExceptions and IgnoreExceptions are the class lists behind Config.Classify.
	RecordExceptions, IgnoreExceptions []string
	// InitialState is initial-state (default CLOSED), also set in Config.InitialState.
	InitialState breaker.State
	// Unmodelled lists the settings in effect that the breaker package does not emulate
	// (the predicate classes): setting -> key path.
	Unmodelled map[string]string
}

// eff is a set of effective settings: setting name -> where it was set.
type eff map[string]*setting

func (e eff) with(in *instance) eff {
	out := make(eff, len(e)+8)
	for k, v := range e {
		out[k] = v
	}
	if in != nil {
		for k, v := range in.settings {
			if k == keyBaseConfig {
				continue
			}
			out[k] = v
		}
	}
	return out
}

func (f *File) baseConfigError(s *section, in *instance, msg string) error {
	b := in.settings[keyBaseConfig]
	return errorf(f.name, b.line, b.key, "%s", msg)
}

// effective builds the settings of `name` with properties `in` by the section's rules
// (resilience4j.md §1.3 for circuit breakers, §7.1 and §8.1 for time limiters and retries).
func (f *File) effective(s *section, name string, in *instance, stack []string) (eff, error) {
	if len(stack) > 64 {
		return nil, &Error{File: f.name, Key: s.prefix, Msg: "base-config chain longer than 64"}
	}
	var base eff
	isConfig := in != nil && s.configs[name] == in
	if isConfig {
		stack = append(stack, name) // only configs entries can form a cycle
	}
	if in != nil && in.settings[keyBaseConfig] != nil && in.settings[keyBaseConfig].val.raw != "" {
		b := in.settings[keyBaseConfig].val.raw
		if b == name && (s.name == sectionCircuitBreaker || isConfig) {
			return nil, f.baseConfigError(s, in, fmt.Sprintf("circular reference: %q names itself as base-config (Spring fails to start: \"Circular reference detected in instance config: %s\")", name, name))
		}
		for _, x := range stack {
			if x == b {
				return nil, f.baseConfigError(s, in, fmt.Sprintf("circular base-config chain %s -> %s (Spring fails to start with a StackOverflowError)", strings.Join(stack, " -> "), b))
			}
		}
		bp := s.configs[b]
		if bp == nil {
			return nil, f.baseConfigError(s, in, fmt.Sprintf("configuration %q does not exist under %s.configs (Spring fails to start: ConfigurationNotFoundException)", b, s.prefix))
		}
		var err error
		base, err = f.effective(s, b, bp, stack)
		if err != nil {
			return nil, err
		}
	} else if cp := s.configs[name]; s.name == sectionCircuitBreaker && cp != nil {
		// circuit breakers only: a same-named config is the implicit base, built from library defaults
		base = eff{}.with(cp)
	} else if dp := s.configs[defaultConfigName]; dp != nil && name != defaultConfigName {
		var err error
		base, err = f.effective(s, defaultConfigName, dp, stack)
		if err != nil {
			return nil, err
		}
	} else {
		base = eff{}
	}
	return base.with(in), nil
}

// checkBaseConfigs builds every configs and instances entry of every section as Spring
// does at start-up, so a missing or circular base-config is reported by Parse.
func (f *File) checkBaseConfigs() []error {
	var errs []error
	seen := map[string]bool{}
	for _, sec := range []string{sectionCircuitBreaker, sectionTimeLimiter, sectionRetry} {
		s := f.sections[sec]
		for _, in := range s.order {
			if _, err := f.effective(s, in.bound, in, nil); err != nil && !seen[err.Error()] {
				seen[err.Error()] = true
				errs = append(errs, err)
			}
		}
	}
	return errs
}

// lookup finds the settings Spring uses for a runtime name: the instance whose bound key
// equals name, else (lazy creation) configs.<name>, else configs.default, else defaults.
// health is where per-breaker health settings are read (instances.<name>, else configs.default).
func (f *File) lookup(sectionName, name string) (e eff, health eff, matched *instance, err error) {
	s := f.sections[sectionName]
	if in := s.instances[name]; in != nil {
		e, err = f.effective(s, name, in, nil)
		if err != nil {
			return nil, nil, nil, err
		}
		// findCircuitBreakerProperties: the instance's properties (merged along its base
		// chain), with unset health fields filled from configs.default.
		health = e
		if dp := s.configs[defaultConfigName]; dp != nil {
			d, derr := f.effective(s, defaultConfigName, dp, nil)
			if derr != nil {
				return nil, nil, nil, derr
			}
			health = e.with(nil)
			for _, k := range []string{keyRegisterHealthIndicator, keyAllowHealthIndicatorFail, keyEventConsumerBufferSize} {
				if health[k] == nil && d[k] != nil {
					health[k] = d[k]
				}
			}
		}
		return e, health, in, nil
	}
	switch {
	case s.configs[name] != nil:
		e, err = f.effective(s, name, s.configs[name], nil)
	case s.configs[defaultConfigName] != nil:
		e, err = f.effective(s, defaultConfigName, s.configs[defaultConfigName], nil)
	default:
		e = eff{}
	}
	if err != nil {
		return nil, nil, nil, err
	}
	health = eff{}
	if dp := s.configs[defaultConfigName]; dp != nil {
		health, err = f.effective(s, defaultConfigName, dp, nil)
	}
	return e, health, nil, err
}

func (e eff) source(src Sources, key string) *setting {
	st := e[key]
	if st == nil {
		src[key] = libraryDefault
		return nil
	}
	src[key] = st.key
	return st
}

// Resolve returns the circuit breaker that Spring (resilience4j-spring-boot3, and Spring
// Cloud CircuitBreaker for Feign clients) builds for the runtime name `name`. A base-config
// that is missing or circular is an *Error naming the base-config key.
func (f *File) Resolve(name string) (*Resolved, error) {
	e, health, matched, err := f.lookup(sectionCircuitBreaker, name)
	if err != nil {
		return nil, err
	}
	r := &Resolved{Name: name, Config: breaker.DefaultConfig(), Sources: Sources{}, EventConsumerBufferSize: defaultEventConsumerBufferSize,
		InitialState: breaker.StateClosed, Unmodelled: map[string]string{}}
	if matched != nil {
		r.MatchedInstance = matched.raw
	}
	c := &r.Config
	if st := e.source(r.Sources, keyFailureRateThreshold); st != nil {
		c.FailureRateThreshold = float32(st.val.f)
	}
	if st := e.source(r.Sources, keySlowCallRateThreshold); st != nil {
		c.SlowCallRateThreshold = float32(st.val.f)
	}
	if st := e.source(r.Sources, keySlowCallDuration); st != nil {
		c.SlowCallDurationThreshold = st.val.d
	}
	if st := e.source(r.Sources, keyWaitInOpen); st != nil {
		c.WaitDurationInOpenState = st.val.d
		c.WaitIntervalFunctionInOpenState = openWaitInterval(e, st)
	}
	if st := e.source(r.Sources, keyPermittedInHalfOpen); st != nil {
		c.PermittedNumberOfCallsInHalfOpenState = st.val.i
	}
	if st := e.source(r.Sources, keyWindowType); st != nil {
		c.SlidingWindowType = st.val.win
	}
	if st := e.source(r.Sources, keyWindowSize); st != nil {
		c.SlidingWindowSize = st.val.i
	}
	if st := e.source(r.Sources, keyMinimumCalls); st != nil {
		c.MinimumNumberOfCalls = st.val.i
	}
	if st := e.source(r.Sources, keyAutomaticTransition); st != nil {
		c.AutomaticTransitionFromOpenToHalfOpenEnabled = st.val.b
	}
	if st := e.source(r.Sources, keyMaxWaitInHalfOpen); st != nil {
		c.MaxWaitDurationInHalfOpenState = st.val.d
	}
	if st := e.source(r.Sources, keyTransitionAfterWait); st != nil {
		c.TransitionToStateAfterWaitDuration = st.val.state
	}
	if st := e.source(r.Sources, keyRecordExceptions); st != nil && len(st.val.list) > 0 {
		r.RecordExceptions = append([]string(nil), st.val.list...)
	}
	if st := e.source(r.Sources, keyIgnoreExceptions); st != nil && len(st.val.list) > 0 {
		r.IgnoreExceptions = append([]string(nil), st.val.list...)
	}
	c.Classify = NewClassifier(r.RecordExceptions, r.IgnoreExceptions)
	if st := e.source(r.Sources, keyInitialState); st != nil {
		r.InitialState = st.val.state
		c.InitialState = st.val.state
	}
	for _, k := range []string{keyRecordFailurePredicate, keyIgnoreExceptionPredicate, keyRecordResultPredicate} {
		if st := e[k]; st != nil {
			r.Unmodelled[k] = st.key
		}
	}
	if st := health.source(r.Sources, keyRegisterHealthIndicator); st != nil {
		r.RegisterHealthIndicator = st.val.b
	}
	if st := health.source(r.Sources, keyAllowHealthIndicatorFail); st != nil {
		r.AllowHealthIndicatorToFail = st.val.b
	}
	if st := health.source(r.Sources, keyEventConsumerBufferSize); st != nil {
		r.EventConsumerBufferSize = st.val.i
	}
	return r, nil
}

// ResolveTimeLimiter returns the TimeLimiterConfig Spring builds for the runtime name:
// instances.<name> (base-config, else configs.default, else defaults), or for a lazily
// created limiter configs.<name>, else configs.default, else the library default (1 s).
func (f *File) ResolveTimeLimiter(name string) (breaker.TimeLimiterConfig, Sources, error) {
	cfg := breaker.DefaultTimeLimiterConfig()
	e, _, _, err := f.lookup(sectionTimeLimiter, name)
	if err != nil {
		return cfg, nil, err
	}
	src := Sources{}
	if st := e.source(src, keyTimeoutDuration); st != nil {
		cfg.TimeoutDuration = st.val.d
	}
	if st := e.source(src, keyCancelRunningFuture); st != nil {
		cfg.CancelRunningFuture = st.val.b
	}
	e.source(src, keyEventConsumerBufferSize)
	return cfg, src, nil
}

// ResolveRetry returns the RetryConfig Spring builds for the runtime name, by the same
// lookup as ResolveTimeLimiter. Retryable is built from retry-exceptions and
// ignore-exceptions (nil when neither is set: every error is retried).
func (f *File) ResolveRetry(name string) (breaker.RetryConfig, Sources, error) {
	cfg := breaker.DefaultRetryConfig()
	e, _, _, err := f.lookup(sectionRetry, name)
	if err != nil {
		return cfg, nil, err
	}
	src := Sources{}
	if st := e.source(src, keyMaxAttempts); st != nil {
		cfg.MaxAttempts = st.val.i
	}
	if st := e.source(src, keyWaitDuration); st != nil {
		cfg.WaitDuration = st.val.d
	}
	if st := e.source(src, keyEnableExponentialBackoff); st != nil {
		cfg.EnableExponentialBackoff = st.val.b
	}
	if st := e.source(src, keyExponentialMultiplier); st != nil {
		cfg.ExponentialBackoffMultiplier = st.val.f
	}
	if st := e.source(src, keyExponentialMaxWait); st != nil {
		cfg.ExponentialMaxWaitDuration = st.val.d
	}
	if st := e.source(src, keyEnableRandomizedWait); st != nil {
		cfg.EnableRandomizedWait = st.val.b
	}
	if st := e.source(src, keyRandomizedWaitFactor); st != nil {
		cfg.RandomizedWaitFactor = st.val.f
	}
	var retry, ignore []string
	if st := e.source(src, keyRetryExceptions); st != nil {
		retry = st.val.list
	}
	if st := e.source(src, keyIgnoreExceptions); st != nil {
		ignore = st.val.list
	}
	cfg.Retryable = NewRetryPredicate(retry, ignore)
	e.source(src, keyEventConsumerBufferSize)
	return cfg, src, nil
}
