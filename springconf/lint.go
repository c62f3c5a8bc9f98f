package springconf

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/cbprobe/cbprobe/breaker"
)

// Severities of a Finding.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
	SeverityInfo    = "info"
)

// DefaultBreakerName is the runtime name Spring Cloud OpenFeign 3.x gives the reference
// service's payment call (Feign.configKey of the client method).
const DefaultBreakerName = "PgPaymentClient#requestPayment(String,PaymentRequest)"

// Finding is one configuration trap.
type Finding struct {
	// ID is a stable kebab-case rule name, e.g. "instance-name-never-matches".
	ID string
	// Severity is "error", "warning" or "info".
	Severity string
	// Key is the property path the finding is about.
	Key string
	// Message explains the trap in one or two sentences.
	Message string
	// Fix says which setting to change and how.
	Fix string
	// Line is the 1-based line of Key in the file; 0 when the key is not in the file.
	Line int
}

// String renders the finding on one line:
// "warning unknown-key resilience4j.x (line 12): message Fix: fix" (no line part when unknown).
func (f Finding) String() string {
	at := f.Key
	if f.Line > 0 {
		at = fmt.Sprintf("%s (line %d)", f.Key, f.Line)
	}
	return fmt.Sprintf("%s %s %s: %s Fix: %s", f.Severity, f.ID, at, f.Message, f.Fix)
}

// LintOptions tells Lint what it cannot read from the file. Zero values mean unknown.
type LintOptions struct {
	// BreakerName is the runtime circuit breaker name; default DefaultBreakerName.
	BreakerName string
	// TimeLimiterName is the runtime time limiter name; default BreakerName (Spring Cloud
	// uses the same id for both).
	TimeLimiterName string
	// RetryName is the runtime retry name; default BreakerName. Retry instance keys are
	// checked against it only when it is given.
	RetryName string
	// Rate is the expected load in requests per second; 0 unknown.
	Rate float64
	// Gateway is the outcome mix of one gateway call; nil unknown.
	Gateway *breaker.CallOutcomeProbabilities
	// RetryOnRejection says whether the caller's retry retries CallNotPermittedException;
	// nil unknown (then the property pg.retry-on-rejection is read if present).
	RetryOnRejection *bool
	// Live holds thresholds read from the running service's actuator; nil unknown. Only
	// FailureRateThreshold and SlowCallRateThreshold are compared, and other fields when non-zero.
	Live *breaker.Config
}

// Lint returns the configuration findings that need no running experiment, errors first,
// then warnings, then infos, in a stable order.
func Lint(f *File, opt LintOptions) []Finding {
	if opt.BreakerName == "" {
		opt.BreakerName = DefaultBreakerName
	}
	if opt.TimeLimiterName == "" {
		opt.TimeLimiterName = opt.BreakerName
	}
	retryNamed := opt.RetryName != ""
	if !retryNamed {
		opt.RetryName = opt.BreakerName
	}
	l := &linter{f: f, opt: opt, retryNamed: retryNamed}
	l.out = append(l.out, f.notes...)
	l.instanceNames()
	// Parse has already built every entry as Spring does, so these cannot fail for a
	// parsed File; a rule whose input cannot be resolved is skipped.
	r, err := f.Resolve(opt.BreakerName)
	tl, tlSrc, tlErr := f.ResolveTimeLimiter(opt.TimeLimiterName)
	rt, rtSrc, rtErr := f.ResolveRetry(opt.RetryName)
	if err == nil {
		l.live(r)
		if tlErr == nil {
			l.slowVsTimeout(r, tl, tlSrc)
		}
		l.minCalls(r, rt, rtErr == nil)
		l.halfOpen(r)
		l.health(r)
		l.unmodelled(r)
	}
	if rtErr == nil {
		l.retryRejections(rt, rtSrc)
	}
	l.endpoints()
	rank := map[string]int{SeverityError: 0, SeverityWarning: 1, SeverityInfo: 2}
	sort.SliceStable(l.out, func(i, j int) bool { return rank[l.out[i].Severity] < rank[l.out[j].Severity] })
	return l.out
}

type linter struct {
	f          *File
	opt        LintOptions
	retryNamed bool // RetryName was given: retry instance keys are checked against it
	out        []Finding
}

func (l *linter) add(id, sev, key string, line int, msg, fix string) {
	l.out = append(l.out, Finding{ID: id, Severity: sev, Key: key, Line: line, Message: msg, Fix: fix})
}

// lineOf finds the line of a key path written in the file (0 if absent).
func (l *linter) lineOf(src string) int {
	elems, err := parseName(src)
	if err != nil {
		return 0
	}
	if e, ok := l.f.props[canonKey(elems)]; ok {
		return e.line
	}
	if items, ok := l.f.lists[canonKey(elems)]; ok && len(items) > 0 {
		return items[0].line
	}
	return 0
}

// where returns the key that set a circuit breaker setting, or, for a library default, the
// key to write it under: the matched instance, else configs.default.
func where(r *Resolved, setting string) string {
	if src := r.Sources[setting]; src != "" && src != libraryDefault {
		return src
	}
	if r.MatchedInstance != "" {
		sep := "."
		if strings.HasPrefix(r.MatchedInstance, "[") {
			sep = ""
		}
		return "resilience4j.circuitbreaker.instances" + sep + r.MatchedInstance + "." + setting
	}
	return "resilience4j.circuitbreaker.configs.default." + setting
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

func (l *linter) instanceNames() {
	names := map[string]string{sectionCircuitBreaker: l.opt.BreakerName, sectionTimeLimiter: l.opt.TimeLimiterName, sectionRetry: l.opt.RetryName}
	for _, sec := range []string{sectionCircuitBreaker, sectionTimeLimiter, sectionRetry} {
		if sec == sectionRetry && !l.retryNamed {
			continue // a retry's runtime name is the caller's choice; check it only when given
		}
		s := l.f.sections[sec]
		want := names[sec]
		anyMatch := s.instances[want] != nil
		for _, in := range s.order {
			if in.mapName == "configs" {
				continue
			}
			key := s.prefix + "." + in.mapName + "." + in.raw
			if in.bracketed {
				key = s.prefix + "." + in.mapName + in.raw
			}
			bracketFix := fmt.Sprintf("Write the key in brackets and quotes: %s: { \"[%s]\": ... } in YAML, or %s.[%s].<setting>=... in .properties; or put the settings under %s.configs.default, which every %s without its own instance uses.",
				in.mapName, want, s.prefix+"."+in.mapName, want, s.prefix, sec)
			switch {
			case !in.bracketed && in.raw != in.bound:
				l.add("instance-name-never-matches", SeverityError, key, in.line,
					fmt.Sprintf("Spring drops every character other than letters, digits, '-' and '.' from an unbracketed map key, so %q binds as %q and never meets a runtime name containing those characters; its settings apply to no %s.", in.raw, in.bound, sec),
					bracketFix)
			case in.bound != want && !anyMatch:
				from := "the library defaults"
				switch {
				case s.configs[want] != nil:
					from = "configs." + want
				case s.configs[defaultConfigName] != nil:
					from = s.prefix + ".configs.default"
				}
				l.add("instance-name-never-matches", SeverityError, key, in.line,
					fmt.Sprintf("The runtime %s is named %q, which %s.%s does not match, so these settings do not apply to it; it is created lazily with %s instead.", sec, want, in.mapName, in.raw, from),
					bracketFix)
			case in.bound != want:
				l.add("instance-name-never-matches", SeverityInfo, key, in.line,
					fmt.Sprintf("%s.%s is not the %s cbprobe checks (%q); its settings apply only to a %s of that exact name.", in.mapName, in.raw, sec, want, sec),
					"Pass the name with --breaker if that is the one to check.")
			}
		}
	}
}

// pct formats a percentage as Java's Float.toString does in the actuator ("50.0%").
func pct(f float32) string {
	s := strconv.FormatFloat(float64(f), 'f', -1, 32)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s + "%"
}

func (l *linter) live(r *Resolved) {
	lv := l.opt.Live
	if lv == nil {
		return
	}
	type cmp struct {
		key       string
		live, cfg string
		differs   bool
	}
	c := r.Config
	cmps := []cmp{
		{keyFailureRateThreshold, pct(lv.FailureRateThreshold), pct(c.FailureRateThreshold), lv.FailureRateThreshold != 0 && lv.FailureRateThreshold != c.FailureRateThreshold},
		{keySlowCallRateThreshold, pct(lv.SlowCallRateThreshold), pct(c.SlowCallRateThreshold), lv.SlowCallRateThreshold != 0 && lv.SlowCallRateThreshold != c.SlowCallRateThreshold},
		{keySlowCallDuration, lv.SlowCallDurationThreshold.String(), c.SlowCallDurationThreshold.String(), lv.SlowCallDurationThreshold != 0 && lv.SlowCallDurationThreshold != c.SlowCallDurationThreshold},
		{keyWindowSize, strconv.Itoa(lv.SlidingWindowSize), strconv.Itoa(c.SlidingWindowSize), lv.SlidingWindowSize != 0 && lv.SlidingWindowSize != c.SlidingWindowSize},
		{keyMinimumCalls, strconv.Itoa(lv.MinimumNumberOfCalls), strconv.Itoa(c.MinimumNumberOfCalls), lv.MinimumNumberOfCalls != 0 && lv.MinimumNumberOfCalls != c.MinimumNumberOfCalls},
		{keyPermittedInHalfOpen, strconv.Itoa(lv.PermittedNumberOfCallsInHalfOpenState), strconv.Itoa(c.PermittedNumberOfCallsInHalfOpenState), lv.PermittedNumberOfCallsInHalfOpenState != 0 && lv.PermittedNumberOfCallsInHalfOpenState != c.PermittedNumberOfCallsInHalfOpenState},
		{keyWaitInOpen, lv.WaitDurationInOpenState.String(), c.WaitDurationInOpenState.String(), lv.WaitDurationInOpenState != 0 && lv.WaitDurationInOpenState != c.WaitDurationInOpenState},
	}
	for _, x := range cmps {
		if !x.differs {
			continue
		}
		src := where(r, x.key)
		l.add("live-threshold-differs", SeverityError, src, l.lineOf(src),
			fmt.Sprintf("The running breaker %q reports %s %s, but this file resolves %s (from %s): the service is not running with this configuration for that breaker.", r.Name, x.key, x.live, x.cfg, src),
			"Check that the breaker name matches an instances key (bracketed for Feign names) or that configs.default holds the setting, and that the service loaded this file (profile, location).")
	}
}

func (l *linter) slowVsTimeout(r *Resolved, tl breaker.TimeLimiterConfig, tlSrc Sources) {
	c := r.Config
	slowKey, toKey := where(r, keySlowCallDuration), tlSrc[keyTimeoutDuration]
	toSrc := toKey
	if toKey == libraryDefault {
		toKey = "resilience4j.timelimiter.configs.default.timeout-duration"
	}
	if c.SlowCallDurationThreshold >= tl.TimeoutDuration {
		sev := SeverityWarning
		if r.Sources[keySlowCallDuration] == libraryDefault && tlSrc[keyTimeoutDuration] == libraryDefault {
			sev = SeverityInfo // slow-call detection was never configured
		}
		l.add("slow-threshold-not-below-timeout", sev, slowKey, l.lineOf(slowKey),
			fmt.Sprintf("slow-call-duration-threshold %v is not below the TimeLimiter timeout %v (%s): a call slow enough to count as slow is cut first and recorded as a failure, so no success is ever slow and slow-call-rate-threshold never acts on successes.", c.SlowCallDurationThreshold, tl.TimeoutDuration, toSrc),
			"Set slow-call-duration-threshold well below timeout-duration (or raise the timeout above the gateway's slowest successful answer).")
		return
	}
	timeout := &breaker.TimeoutError{Name: l.opt.TimeLimiterName}
	if c.Classify == nil || c.Classify(timeout) == breaker.OutcomeFailure {
		l.add("timeouts-count-as-slow-failures", SeverityWarning, toKey, l.lineOf(toKey),
			fmt.Sprintf("A call cut by the TimeLimiter after %v is recorded as a failure (TimeoutException is recorded) and, being longer than the slow threshold %v, also as a slow call: each timeout raises both the failure rate and the slow-call rate.", tl.TimeoutDuration, c.SlowCallDurationThreshold),
			"Keep timeout-duration above the gateway's slowest expected answer, or add java.util.concurrent.TimeoutException to ignore-exceptions if timeouts must not trip the breaker.")
	}
}

// attemptsPerRequest is the most gateway calls one request can make: the retry's
// max-attempts, or pg.retry-max-attempts when the application sets it.
func (l *linter) attemptsPerRequest(rt breaker.RetryConfig, ok bool) (int, string) {
	if v, found := l.f.Get("pg.retry-max-attempts"); found {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 1 {
			return n, "pg.retry-max-attempts"
		}
	}
	if ok {
		return rt.MaxAttempts, "retry max-attempts"
	}
	return 1, "no retry"
}

func (l *linter) minCalls(r *Resolved, rt breaker.RetryConfig, rtOK bool) {
	c := r.Config
	if c.SlidingWindowType != breaker.TimeBased || l.opt.Rate <= 0 {
		return
	}
	attempts, from := l.attemptsPerRequest(rt, rtOK)
	calls := l.opt.Rate * float64(c.SlidingWindowSize) * float64(attempts)
	if calls < float64(c.MinimumNumberOfCalls) {
		key := where(r, keyMinimumCalls)
		l.add("time-based-min-calls-unreachable", SeverityWarning, key, l.lineOf(key),
			fmt.Sprintf("TIME_BASED window of %d s at %g req/s with at most %s per request (%s) holds at most %.0f calls, below minimum-number-of-calls %d (TIME_BASED does not cap it by the window): both rates stay -1 and the breaker never opens.", c.SlidingWindowSize, l.opt.Rate, plural(attempts, "attempt"), from, math.Floor(calls), c.MinimumNumberOfCalls),
			fmt.Sprintf("Set minimum-number-of-calls to at most %d, or lengthen sliding-window-size.", int(math.Floor(calls))))
	}
}

func (l *linter) halfOpen(r *Resolved) {
	if l.opt.Gateway == nil {
		return
	}
	p := breaker.HalfOpenPassProbability(r.Config, *l.opt.Gateway)
	key := where(r, keyPermittedInHalfOpen)
	switch {
	case p == 0:
		l.add("half-open-trial-cannot-pass", SeverityError, key, l.lineOf(key),
			fmt.Sprintf("This breaker cannot close while the gateway behaves so: with %s, a failure-rate threshold of %s and a slow-call-rate threshold of %s (slow: above %v), no half-open trial keeps both rates below their thresholds.", plural(min(r.Config.PermittedNumberOfCallsInHalfOpenState, r.Config.MinimumNumberOfCalls), "deciding trial call"), pct(r.Config.FailureRateThreshold), pct(r.Config.SlowCallRateThreshold), r.Config.SlowCallDurationThreshold),
			"Raise slow-call-duration-threshold above the gateway's normal latency, or the thresholds, so a healthy-enough gateway can pass the trial.")
	case p < 0.5:
		l.add("half-open-trial-cannot-pass", SeverityWarning, key, l.lineOf(key),
			fmt.Sprintf("A half-open trial passes with probability %.3g for this gateway behaviour: the breaker will mostly go back to OPEN and wait %v again.", p, r.Config.WaitDurationInOpenState),
			"Raise slow-call-duration-threshold or the rate thresholds, or allow more trial calls.")
	}
}

func (l *linter) health(r *Resolved) {
	m := l.f.Management()
	if !m.HealthCircuitBreakersEnabled {
		k := "management.health.circuitbreakers.enabled"
		l.add("health-indicator-not-registered", SeverityWarning, k, l.lineOf(k),
			"The circuitBreakers health indicator is off (Spring's default), so /actuator/health says nothing about open breakers.",
			"Set management.health.circuitbreakers.enabled: true.")
	}
	if !r.RegisterHealthIndicator {
		k := where(r, keyRegisterHealthIndicator)
		l.add("health-indicator-not-registered", SeverityWarning, k, l.lineOf(k),
			fmt.Sprintf("register-health-indicator is false for %q, so the breaker is left out of the circuitBreakers health component.", r.Name),
			"Set register-health-indicator: true under configs.default (it also covers lazily created Feign breakers).")
	}
}

func (l *linter) unmodelled(r *Resolved) {
	keys := make([]string, 0, len(r.Unmodelled))
	for k := range r.Unmodelled {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		src := r.Unmodelled[k]
		l.add("setting-not-modelled", SeverityInfo, src, l.lineOf(src),
			fmt.Sprintf("%s is in effect for %q but cbprobe's breaker model does not emulate it; predictions ignore it.", k, r.Name),
			"Treat predictions for this breaker as approximate.")
	}
}

func (l *linter) retryRejections(rt breaker.RetryConfig, src Sources) {
	onRejection := l.opt.RetryOnRejection
	if onRejection == nil {
		if v, ok := l.f.Get("pg.retry-on-rejection"); ok {
			if b, err := parseValue(kindBool, v); err == nil {
				onRejection = &b.b
			}
		}
	}
	if onRejection != nil && !*onRejection {
		return
	}
	attempts, _ := l.attemptsPerRequest(rt, true)
	if attempts <= 1 {
		return
	}
	if rt.Retryable != nil && !rt.Retryable(&breaker.CallNotPermittedError{Name: l.opt.BreakerName, State: breaker.StateOpen}) {
		return
	}
	key := src[keyIgnoreExceptions]
	if key == libraryDefault {
		key = "resilience4j.retry.configs.default.ignore-exceptions"
	}
	l.add("retry-retries-rejections", SeverityWarning, key, l.lineOf(key),
		fmt.Sprintf("The retry (up to %d attempts) retries CallNotPermittedException: once the breaker is OPEN each request spins through its attempts, and in HALF_OPEN retries spend the trial permits.", attempts),
		"Add io.github.resilience4j.circuitbreaker.CallNotPermittedException to the retry's ignore-exceptions.")
}

func (l *linter) endpoints() {
	m := l.f.Management()
	var missing []string
	for _, id := range []string{"circuitbreakers", "circuitbreakerevents", "prometheus"} {
		if !m.Exposed(id) {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return
	}
	k := "management.endpoints.web.exposure.include"
	l.add("endpoints-not-exposed", SeverityWarning, k, l.lineOf(k),
		fmt.Sprintf("The actuator endpoints %s are not exposed, so cbprobe (and you) cannot watch the breaker's state, rates and events.", strings.Join(missing, ", ")),
		"Add them to management.endpoints.web.exposure.include (e.g. health,circuitbreakers,circuitbreakerevents,prometheus).")
}
