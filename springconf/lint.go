package springconf

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cbprobe/cbprobe/breaker"
)

// Severities of a Finding.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
	SeverityInfo    = "info"
)

// DefaultBreakerName is the runtime name Spring Cloud OpenFeign 3.x (or 4.x with
// alphanumeric-ids disabled) gives the reference service's payment call (Feign.configKey of
// the client method).
const DefaultBreakerName = "PgPaymentClient#requestPayment(String,PaymentRequest)"

// Finding is one configuration trap.
type Finding struct {
	// ID is a stable kebab-case rule name, e.g. "instance-name-never-matches".
	ID string
	// Severity is "error", "warning" or "info". A finding that holds only if a Retry or
	// TimeLimiter the file does not tie to the breaker wraps it is "info", and its
	// message says what it assumes.
	Severity string
	// Key is the property path the finding is about.
	Key string
	// Message explains the trap in one or two sentences.
	Message string
	// Fix says which setting to change and how.
	Fix string
	// Line is the 1-based line of Key in the file; 0 when the key is not in the file.
	Line int
	// Breakers names the circuit breakers the finding is about (empty for file-wide findings).
	Breakers []string `json:",omitempty"`
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
	// BreakerName is the runtime circuit breaker to check. Empty: every circuit breaker
	// instance the file defines, the breakers that use configs.default, and the Feign
	// breakers when the file enables Spring Cloud CircuitBreaker for Feign.
	BreakerName string
	// TimeLimiterName, when set, says the checked breakers are called through this
	// TimeLimiter (resolved from the file: instances, configs, configs.default, 1 s).
	TimeLimiterName string
	// RetryName, when set, says the checked breakers are called through this Retry.
	RetryName string
	// AssumeTimeLimiter says every checked breaker is called through a TimeLimiter of
	// its own name; AssumeRetry the same for a Retry.
	AssumeTimeLimiter, AssumeRetry bool
	// AssumeFeign says the service uses Spring Cloud CircuitBreaker for its Feign clients
	// (as spring.cloud.openfeign.circuitbreaker.enabled=true would).
	AssumeFeign bool
	// Rate is the expected load in requests per second; 0 unknown.
	Rate float64
	// Gateway is the outcome mix of one gateway call; nil unknown. GatewayFor, when set,
	// is used instead: it gives the mix a breaker of config cfg records behind a
	// TimeLimiter of timeout (< 0: no TimeLimiter wraps the breaker), e.g. from
	// sim.OutcomeProbabilities.
	Gateway    *breaker.CallOutcomeProbabilities
	GatewayFor func(cfg breaker.Config, timeout time.Duration) *breaker.CallOutcomeProbabilities
	// RetryOnRejection says whether the caller's retry retries CallNotPermittedException;
	// nil unknown (then the property pg.retry-on-rejection is read if present).
	RetryOnRejection *bool
	// Live holds thresholds read from the running service's actuator for BreakerName;
	// LiveByName for any breaker by runtime name. Only FailureRateThreshold and
	// SlowCallRateThreshold are compared, and other fields when non-zero.
	Live       *breaker.Config
	LiveByName map[string]*breaker.Config
}

// subject kinds: which breaker a subject stands for.
const (
	subjectNamed    = iota // --name
	subjectInstance        // an instances/backends entry
	subjectDefaults        // any breaker without its own instance: configs.default
	subjectFeign           // the Feign breakers of Spring Cloud CircuitBreaker
)

// lazyName is a runtime name no instances key can hold: it resolves as a lazily created
// breaker does (configs.default, else the library defaults).
const lazyName = "\x00lazily created"

// subject is one circuit breaker lint checks.
type subject struct {
	name  string // runtime name to resolve
	label string // how findings name it
	kind  int
	feign bool // Spring Cloud CircuitBreaker creates it for a Feign method
	r     *Resolved
	tl    pairing
	rt    pairing
}

// pairing says whether a TimeLimiter or Retry wraps a breaker and what shows it.
type pairing struct {
	applied bool   // the file, Spring Cloud or the user says it wraps the breaker
	off     bool   // the file says none wraps it (Spring Cloud's TimeLimiter disabled)
	why     string // what shows it, or what is assumed
	name    string // runtime name to resolve its config by
}

// Lint returns the configuration findings that need no running experiment, errors first,
// then warnings, then infos, in a stable order.
func Lint(f *File, opt LintOptions) []Finding {
	l := &linter{f: f, opt: opt, agg: map[string]int{}}
	l.feign = f.feignSetup(opt)
	l.out = append(l.out, f.notes...)
	subjects := l.subjects()
	l.instanceNames()
	l.backoff()
	for _, s := range subjects {
		l.live(s)
		l.timeLimiter(s)
		l.minCalls(s)
		l.halfOpen(s)
		l.registered(s)
		l.unmodelled(s)
		l.retryRejections(s)
	}
	l.healthIndicator()
	l.feignBulkhead()
	l.endpoints()
	out := l.render()
	rank := map[string]int{SeverityError: 0, SeverityWarning: 1, SeverityInfo: 2}
	sort.SliceStable(out, func(i, j int) bool { return rank[out[i].Severity] < rank[out[j].Severity] })
	return out
}

type linter struct {
	f     *File
	opt   LintOptions
	feign feignSetup
	out   []Finding
	// per-breaker findings that say the same about the same key are merged: agg maps
	// ID, severity, key and message (with the breaker left out) to an index in pending.
	agg     map[string]int
	pending []pendingFinding
}

type pendingFinding struct {
	f      Finding
	msg    func(breakers string) string
	labels []string
	order  int
}

func (l *linter) add(id, sev, key string, line int, msg, fix string) {
	l.out = append(l.out, Finding{ID: id, Severity: sev, Key: key, Line: line, Message: msg, Fix: fix})
}

// addFor records a finding about breaker s; msg renders the message for the breakers it
// concerns. The same finding for several breakers is reported once, naming them all.
func (l *linter) addFor(s *subject, id, sev, key string, line int, msg func(breakers string) string, fix string) {
	k := id + "\x00" + sev + "\x00" + key + "\x00" + msg("\x01") + "\x00" + fix
	if i, ok := l.agg[k]; ok {
		p := &l.pending[i]
		for _, x := range p.labels {
			if x == s.label {
				return
			}
		}
		p.labels = append(p.labels, s.label)
		p.f.Breakers = append(p.f.Breakers, s.displayName())
		return
	}
	l.agg[k] = len(l.pending)
	l.pending = append(l.pending, pendingFinding{f: Finding{ID: id, Severity: sev, Key: key, Line: line, Fix: fix, Breakers: []string{s.displayName()}},
		msg: msg, labels: []string{s.label}, order: len(l.out)})
	l.out = append(l.out, Finding{}) // placeholder keeps the file order
}

func (l *linter) render() []Finding {
	out := l.out
	for _, p := range l.pending {
		f := p.f
		f.Message = p.msg(joinAnd(p.labels))
		out[p.order] = f
	}
	return out
}

func joinAnd(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

func (s *subject) displayName() string {
	switch s.kind {
	case subjectDefaults:
		return "configs.default"
	case subjectFeign:
		return "Feign: " + s.name
	}
	return s.name
}

// lineOf finds the line of a key path written in the file (0 if absent).
func (l *linter) lineOf(src string) int { return l.f.lineOfKey(src) }

// where returns the key that set a circuit breaker setting, or, for a library default, the
// key to write it under: configs.default, which every instance inherits unless it names
// another base-config (so the same default in several breakers is one finding).
func where(r *Resolved, setting string) string {
	if src := r.Sources[setting]; src != "" && src != libraryDefault {
		return src
	}
	return "resilience4j.circuitbreaker.configs.default." + setting
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// --- Feign ----------------------------------------------------------------------------

// feignSetup is what the file says about Spring Cloud CircuitBreaker for OpenFeign.
type feignSetup struct {
	enabled      bool
	why          string // the key (and line) or flag that enables it
	alphanumeric bool   // runtime names are Feign.configKey with every non-alphanumeric dropped
	proven       bool   // alphanumeric is what the file (or --name) says, not the 4.x default assumed
	namingWhy    string
	tlOff        bool // spring.cloud.circuitbreaker.resilience4j.disable-time-limiter or disable-thread-pool
	tlOffWhy     string
	tlOffFor     map[string]bool // disable-time-limiter-map
	clients      []string        // Feign client names from spring.cloud.openfeign.client.config.<name>
}

func (f *File) boolProp(key string) (val, set bool, line int) {
	v, ok := f.Get(key)
	if !ok {
		return false, false, 0
	}
	b, err := parseValue(kindBool, v)
	return err == nil && b.b, true, f.lineOfKey(key)
}

func at(key string, line int) string {
	if line > 0 {
		return fmt.Sprintf("%s, line %d", key, line)
	}
	return key
}

// isFeignConfigKey reports whether a name has the form of Feign.configKey: Client#method(Types).
func isFeignConfigKey(name string) bool {
	i := strings.IndexByte(name, '#')
	return i > 0 && strings.Contains(name[i:], "(") && strings.HasSuffix(name, ")")
}

// alphanumericID is what AlphanumericCircuitBreakerNameResolver makes of a config key.
func alphanumericID(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			b.WriteByte(c)
		}
	}
	return b.String()
}

func (f *File) feignSetup(opt LintOptions) feignSetup {
	var fs feignSetup
	v4, set4, line4 := f.boolProp("spring.cloud.openfeign.circuitbreaker.enabled")
	v3, set3, line3 := f.boolProp("feign.circuitbreaker.enabled")
	switch {
	case set4 && v4:
		fs.enabled, fs.why = true, at("spring.cloud.openfeign.circuitbreaker.enabled", line4)
	case set3 && v3:
		fs.enabled, fs.why = true, at("feign.circuitbreaker.enabled", line3)
	case opt.AssumeFeign:
		fs.enabled, fs.why = true, "--assume feign"
	case isFeignConfigKey(opt.BreakerName):
		fs.enabled, fs.why = true, fmt.Sprintf("--name %q has the Feign form Client#method(Types)", opt.BreakerName)
	}
	// Naming: spring-cloud-openfeign 4.x makes alphanumeric ids the default (matchIfMissing
	// = true); 3.1.x (the feign.circuitbreaker.* keys) defaults to Feign.configKey.
	fs.alphanumeric, fs.namingWhy = true, "spring-cloud-openfeign 4.x default (alphanumeric-ids), assumed"
	if set3 && !set4 {
		fs.alphanumeric, fs.proven, fs.namingWhy = false, true, "spring-cloud-openfeign 3.x (feign.circuitbreaker.* keys) default"
	}
	if v, set, line := f.boolProp("feign.circuitbreaker.alphanumeric-ids.enabled"); set {
		fs.alphanumeric, fs.proven, fs.namingWhy = v, true, at("feign.circuitbreaker.alphanumeric-ids.enabled", line)
	}
	if v, set, line := f.boolProp("spring.cloud.openfeign.circuitbreaker.alphanumeric-ids.enabled"); set {
		fs.alphanumeric, fs.proven, fs.namingWhy = v, true, at("spring.cloud.openfeign.circuitbreaker.alphanumeric-ids.enabled", line)
	} else if set4 && v4 && !fs.proven {
		fs.proven, fs.namingWhy = true, "spring-cloud-openfeign 4.x default (spring.cloud.openfeign.* keys, alphanumeric-ids not disabled)"
	}
	if isFeignConfigKey(opt.BreakerName) {
		fs.alphanumeric, fs.proven, fs.namingWhy = false, true, fmt.Sprintf("--name %q", opt.BreakerName)
	}
	if v, set, line := f.boolProp("spring.cloud.circuitbreaker.resilience4j.disable-time-limiter"); set && v {
		fs.tlOff, fs.tlOffWhy = true, at("spring.cloud.circuitbreaker.resilience4j.disable-time-limiter", line)
	}
	if v, set, line := f.boolProp("spring.cloud.circuitbreaker.resilience4j.disable-thread-pool"); set && v {
		fs.tlOff, fs.tlOffWhy = true, at("spring.cloud.circuitbreaker.resilience4j.disable-thread-pool", line)+" (no thread pool, no TimeLimiter)"
	}
	fs.tlOffFor = map[string]bool{}
	clients := map[string]bool{}
	for _, e := range f.entries {
		c := canonKey(e.elems)
		for _, p := range []string{"spring.cloud.circuitbreaker.resilience4j.disabletimelimitermap."} {
			if strings.HasPrefix(c, p) && len(e.elems) == 6 {
				if b, err := parseValue(kindBool, e.value); err == nil {
					fs.tlOffFor[boundMapKey(e.elems[5])] = b.b
				}
			}
		}
		var nameEl *element
		switch {
		case len(e.elems) > 5 && strings.HasPrefix(c, "spring.cloud.openfeign.client.config."):
			nameEl = &e.elems[5]
		case len(e.elems) > 4 && strings.HasPrefix(c, "feign.client.config."):
			nameEl = &e.elems[3]
		}
		if nameEl != nil {
			if n := boundMapKey(*nameEl); n != "" && n != "default" && !clients[n] {
				clients[n] = true
				fs.clients = append(fs.clients, n)
			}
		}
	}
	return fs
}

// feignName is the runtime name of the reference service's Feign breaker under the naming.
func (fs feignSetup) feignName() string {
	if fs.alphanumeric {
		return alphanumericID(DefaultBreakerName)
	}
	return DefaultBreakerName
}

// --- subjects ---------------------------------------------------------------------------

func (l *linter) subjects() []*subject {
	var out []*subject
	cb := l.f.sections[sectionCircuitBreaker]
	if l.opt.BreakerName != "" {
		s := &subject{name: l.opt.BreakerName, label: strconv.Quote(l.opt.BreakerName), kind: subjectNamed}
		s.feign = l.feign.enabled && (l.opt.AssumeFeign || isFeignConfigKey(s.name) || s.name == l.feign.feignName())
		out = append(out, s)
	} else {
		seen := map[string]bool{}
		for _, in := range cb.order {
			if in.mapName == "configs" || seen[in.bound] {
				continue
			}
			seen[in.bound] = true
			out = append(out, &subject{name: in.bound, label: strconv.Quote(in.bound), kind: subjectInstance})
		}
		if l.feign.enabled {
			name := l.feign.feignName()
			if seen[name] {
				for _, s := range out {
					s.feign = s.feign || s.name == name
				}
			} else {
				out = append(out, &subject{name: name, feign: true, kind: subjectFeign,
					label: fmt.Sprintf("the Feign breakers (one per client method, named like %q)", name)})
			}
		} else if cb.configs[defaultConfigName] != nil {
			out = append(out, &subject{name: lazyName, kind: subjectDefaults,
				label: "the breakers without an instance of their own (configs.default)"})
		}
	}
	kept := out[:0]
	for _, s := range out {
		r, err := l.f.Resolve(s.name)
		if err != nil {
			continue // Parse has built every entry as Spring does; an unresolvable one is skipped
		}
		r.Name = s.name
		if s.kind == subjectDefaults {
			r.Name = "configs.default"
		}
		s.r = r
		s.tl = l.pairTimeLimiter(s)
		s.rt = l.pairRetry(s)
		kept = append(kept, s)
	}
	return kept
}

// hasEntry reports whether a section has an instances/backends or configs entry bound to name.
func (l *linter) hasEntry(section, name string) (string, bool) {
	s := l.f.sections[section]
	if in := s.instances[name]; in != nil {
		return in.path(s, "")[:len(in.path(s, ""))-1], true
	}
	if c := s.configs[name]; c != nil {
		return c.path(s, "")[:len(c.path(s, ""))-1], true
	}
	return "", false
}

func (l *linter) pairTimeLimiter(s *subject) pairing {
	own, hasOwn := l.hasEntry(sectionTimeLimiter, s.name)
	name := s.name
	switch {
	case l.opt.TimeLimiterName != "":
		return pairing{applied: true, why: "--timelimiter " + l.opt.TimeLimiterName, name: l.opt.TimeLimiterName}
	case s.feign && (l.feign.tlOff || l.feign.tlOffFor[s.name]) && !l.opt.AssumeTimeLimiter:
		why := l.feign.tlOffWhy
		if l.feign.tlOffFor[s.name] {
			why = "spring.cloud.circuitbreaker.resilience4j.disable-time-limiter-map." + s.name
		}
		return pairing{off: true, why: why, name: name}
	case s.feign:
		return pairing{applied: true, why: "Spring Cloud CircuitBreaker wraps every Feign call in a TimeLimiter (" + l.feign.why + ")", name: name}
	case l.opt.AssumeTimeLimiter:
		return pairing{applied: true, why: "--assume timelimiter", name: name}
	case hasOwn:
		return pairing{applied: true, why: own, name: name}
	case s.kind == subjectDefaults && l.f.sections[sectionTimeLimiter].configs[defaultConfigName] != nil:
		return pairing{applied: true, why: "resilience4j.timelimiter.configs.default", name: name}
	}
	return pairing{why: "this file ties none to it", name: name}
}

func (l *linter) pairRetry(s *subject) pairing {
	own, hasOwn := l.hasEntry(sectionRetry, s.name)
	name := s.name
	switch {
	case l.opt.RetryName != "":
		return pairing{applied: true, why: "--retry " + l.opt.RetryName, name: l.opt.RetryName}
	case l.opt.AssumeRetry:
		return pairing{applied: true, why: "--assume retry", name: name}
	case hasOwn:
		return pairing{applied: true, why: own, name: name}
	case s.kind == subjectDefaults && l.f.sections[sectionRetry].configs[defaultConfigName] != nil:
		return pairing{applied: true, why: "resilience4j.retry.configs.default", name: name}
	case s.kind != subjectInstance && s.kind != subjectDefaults:
		if _, ok := l.f.Get("pg.retry-max-attempts"); ok {
			return pairing{applied: true, why: "pg.retry-max-attempts (the reference service's retry)", name: name}
		}
	}
	return pairing{why: "this file ties none to it", name: name}
}

// dependent returns the severity of a finding that holds only if p wraps the breaker: sev
// when it does, info otherwise; and a sentence saying what is assumed.
func dependent(p pairing, sev, what string) (string, string) {
	if p.applied {
		return sev, ""
	}
	return SeverityInfo, fmt.Sprintf("Assuming a %s wraps the breaker (%s; if none does, ignore this): ", what, p.why)
}

// --- rules ------------------------------------------------------------------------------

func (l *linter) instanceNames() {
	for _, sec := range []string{sectionCircuitBreaker, sectionTimeLimiter, sectionRetry} {
		s := l.f.sections[sec]
		want := ""
		switch sec {
		case sectionCircuitBreaker:
			want = l.opt.BreakerName
		case sectionTimeLimiter:
			want = l.opt.TimeLimiterName
		case sectionRetry:
			want = l.opt.RetryName
		}
		nInstances := 0
		for _, in := range s.order {
			if in.mapName != "configs" {
				nInstances++
			}
		}
		anyMatch := want != "" && s.instances[want] != nil
		for _, in := range s.order {
			if in.mapName == "configs" {
				continue
			}
			spellings := append([]spelling{{mapName: in.mapName, raw: in.raw, bracketed: in.bracketed, line: in.line}}, in.spellings...)
			stripped := false
			for i, sp := range spellings {
				key := s.prefix + "." + sp.mapName + "." + sp.raw
				if sp.bracketed {
					key = s.prefix + "." + sp.mapName + sp.raw
				}
				merged := ""
				if i > 0 {
					merged = fmt.Sprintf(" Spring merges it with %s.%s (line %d), which binds to the same name.", in.mapName, in.raw, in.line)
				}
				exact := want
				if exact == "" {
					exact = strings.Trim(sp.raw, "[]")
				}
				bracketFix := fmt.Sprintf("Write the key in brackets and quotes: %s: { \"[%s]\": ... } in YAML, or %s.[%s].<setting>=... in .properties; or put the settings under %s.configs.default, which every %s without its own instance uses.",
					sp.mapName, exact, s.prefix+"."+sp.mapName, exact, s.prefix, sec)
				text := strings.Trim(sp.raw, "[]")
				switch {
				case !sp.bracketed && text != in.bound && isFeignConfigKey(text) && l.feign.enabled && l.feign.alphanumeric && l.feign.proven:
					l.add("instance-name-never-matches", SeverityInfo, key, sp.line,
						fmt.Sprintf("Spring binds %q as %q, which is also the name Spring Cloud OpenFeign gives that method with alphanumeric ids (%s), so the settings apply.%s", text, in.bound, l.feign.namingWhy, merged),
						fmt.Sprintf("Write the key as %s so it reads as what it binds to.", in.bound))
				case !sp.bracketed && text != in.bound:
					stripped = true
					l.add("instance-name-never-matches", SeverityError, key, sp.line,
						fmt.Sprintf("Spring drops every character other than letters, digits, '-', '_' and '.' from an unbracketed map key, so %q binds as %q and never meets a runtime name containing those characters; its settings apply to no %s.%s", text, in.bound, sec, merged),
						bracketFix)
				case sp.bracketed && isFeignConfigKey(text) && l.feign.enabled && l.feign.alphanumeric && l.feign.proven && sec != sectionRetry:
					l.add("instance-name-never-matches", SeverityError, key, sp.line,
						fmt.Sprintf("Spring Cloud OpenFeign names this method's breaker %q (alphanumeric ids: %s), but the bracketed key keeps %q exactly, so it never matches; its settings apply to no Feign call.", alphanumericID(text), l.feign.namingWhy, text),
						fmt.Sprintf("Write the key as %s, or set spring.cloud.openfeign.circuitbreaker.alphanumeric-ids.enabled: false to keep Client#method(Types) names.", alphanumericID(text)))
				}
			}
			if stripped {
				continue
			}
			if sec == sectionCircuitBreaker && l.feign.enabled && want == "" {
				for _, c := range l.feign.clients {
					if c == in.bound {
						l.add("instance-name-never-matches", SeverityError, s.prefix+"."+in.mapName+"."+in.raw, in.line,
							fmt.Sprintf("%q is a Feign client's name (%s), but Spring Cloud CircuitBreaker names a Feign client's breakers per method (like %q), never after the client, so %s.%s applies to none of them; they are created from configs.default.", c, "spring.cloud.openfeign.client.config."+c, l.feign.feignName(), in.mapName, in.raw),
							"Put the settings under resilience4j.circuitbreaker.configs.default, or under instances keyed by each method's breaker name, or set spring.cloud.openfeign.circuitbreaker.group.enabled: true and use configs."+c+".")
					}
				}
			}
			if want == "" || anyMatch || in.bound == want {
				continue
			}
			from := "the library defaults"
			switch {
			case s.configs[want] != nil:
				from = "configs." + want
			case s.configs[defaultConfigName] != nil:
				from = s.prefix + ".configs.default"
			}
			if sec == sectionCircuitBreaker && nInstances == 1 {
				l.add("instance-name-never-matches", SeverityError, s.prefix+"."+in.mapName+"."+in.raw, in.line,
					fmt.Sprintf("The runtime %s is named %q, which %s.%s does not match, so these settings do not apply to it; it is created lazily with %s instead.", sec, want, in.mapName, in.raw, from),
					fmt.Sprintf("Write the key in brackets and quotes: %s: { \"[%s]\": ... } in YAML, or %s.[%s].<setting>=... in .properties; or put the settings under %s.configs.default, which every %s without its own instance uses.", in.mapName, want, s.prefix+"."+in.mapName, want, s.prefix, sec))
				continue
			}
			l.add("instance-name-never-matches", SeverityInfo, s.prefix+"."+in.mapName+"."+in.raw, in.line,
				fmt.Sprintf("No %s entry is named %q, so that %s is created with %s; %s.%s applies only to a %s named exactly %q.", sec, want, sec, from, in.mapName, in.raw, sec, in.bound),
				"Check the runtime name (actuator /circuitbreakers, /retries, /timelimiters lists them), and key the settings by it.")
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

func (l *linter) live(s *subject) {
	lv := l.opt.LiveByName[s.name]
	if s.kind == subjectNamed && l.opt.Live != nil {
		lv = l.opt.Live
	}
	if lv == nil {
		return
	}
	r := s.r
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
		x := x
		l.addFor(s, "live-threshold-differs", SeverityError, src, l.lineOf(src),
			func(b string) string {
				return fmt.Sprintf("The running breaker %s reports %s %s, but this file resolves %s (from %s): the service is not running with this configuration for that breaker.", b, x.key, x.live, x.cfg, src)
			},
			"Check that the breaker name matches an instances key (bracketed for Feign names) or that configs.default holds the setting, and that the service loaded this file (profile, location).")
	}
}

// timeLimiter checks how a TimeLimiter's timeouts meet the breaker: record-exceptions that
// leave TimeoutException out, a slow threshold at or above the timeout, timeouts counted
// as slow failures.
func (l *linter) timeLimiter(s *subject) {
	if s.tl.off {
		return
	}
	tl, tlSrc, err := l.f.ResolveTimeLimiter(s.tl.name)
	if err != nil {
		return
	}
	r, c := s.r, s.r.Config
	toSrc := tlSrc[keyTimeoutDuration]
	toKey := toSrc
	if toKey == libraryDefault {
		toKey = "resilience4j.timelimiter.configs.default.timeout-duration"
		if s.feign {
			toSrc = "Spring Cloud CircuitBreaker's default, the library's 1 s"
		}
	}
	outcome := breaker.OutcomeFailure
	if c.Classify != nil {
		outcome = c.Classify(&breaker.TimeoutError{Name: s.tl.name})
	}
	what := "TimeLimiter"
	if l.opt.TimeLimiterName != "" {
		what = fmt.Sprintf("TimeLimiter %q", l.opt.TimeLimiterName)
	}
	if outcome == breaker.OutcomeSuccess {
		key := where(r, keyRecordExceptions)
		sev, assume := dependent(s.tl, SeverityWarning, what)
		tlTimeout := tl.TimeoutDuration
		l.addFor(s, "timeouts-recorded-as-success", sev, key, l.lineOf(key),
			func(b string) string {
				return assume + fmt.Sprintf("record-exceptions of %s lists %s but not java.util.concurrent.TimeoutException (nor a superclass), so every call the TimeLimiter cuts after %v counts as a success: a gateway that hangs keeps the failure rate down and cannot open the breaker by failure rate.", b, strings.Join(r.RecordExceptions, ", "), tlTimeout)
			},
			"Add java.util.concurrent.TimeoutException to record-exceptions.")
	}
	recorded := map[breaker.Outcome]string{
		breaker.OutcomeFailure: "recorded as a failure",
		breaker.OutcomeSuccess: "recorded as a success (TimeoutException is not in record-exceptions)",
		breaker.OutcomeIgnored: "ignored (TimeoutException is in ignore-exceptions)",
	}[outcome]
	if c.SlowCallDurationThreshold >= tl.TimeoutDuration {
		sev, assume := dependent(s.tl, SeverityWarning, what)
		if r.Sources[keySlowCallDuration] == libraryDefault && tlSrc[keyTimeoutDuration] == libraryDefault {
			sev = SeverityInfo // slow-call detection was never configured
		}
		slowKey := where(r, keySlowCallDuration)
		slow, to := c.SlowCallDurationThreshold, tl.TimeoutDuration
		l.addFor(s, "slow-threshold-not-below-timeout", sev, slowKey, l.lineOf(slowKey),
			func(b string) string {
				return assume + fmt.Sprintf("slow-call-duration-threshold %v of %s is not below the TimeLimiter timeout %v (%s): a call slow enough to count as slow is cut first and %s, so no success is ever slow and slow-call-rate-threshold never acts on successes.", slow, b, to, toSrc, recorded)
			},
			"Set slow-call-duration-threshold well below timeout-duration (or raise the timeout above the gateway's slowest successful answer).")
		return
	}
	if outcome == breaker.OutcomeFailure {
		sev, assume := dependent(s.tl, SeverityWarning, what)
		slow, to := c.SlowCallDurationThreshold, tl.TimeoutDuration
		l.addFor(s, "timeouts-count-as-slow-failures", sev, toKey, l.lineOf(toKey),
			func(b string) string {
				return assume + fmt.Sprintf("A call to %s cut by the TimeLimiter after %v (%s) is recorded as a failure (TimeoutException is recorded) and, being longer than the slow threshold %v, also as a slow call: each timeout raises both the failure rate and the slow-call rate.", b, to, toSrc, slow)
			},
			"Keep timeout-duration above the gateway's slowest expected answer, or add java.util.concurrent.TimeoutException to ignore-exceptions if timeouts must not trip the breaker.")
	}
}

// attempts is the most gateway calls one request can make through the breaker's retry:
// 1 when no retry is tied to it.
func (l *linter) attempts(s *subject) (int, string) {
	if !s.rt.applied {
		return 1, "no retry is tied to it in this file"
	}
	if v, found := l.f.Get("pg.retry-max-attempts"); found {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 1 {
			return n, "pg.retry-max-attempts"
		}
	}
	rt, src, err := l.f.ResolveRetry(s.rt.name)
	if err != nil {
		return 1, "the retry cannot be resolved"
	}
	from := src[keyMaxAttempts]
	if from == libraryDefault {
		from = "the library default"
	}
	return rt.MaxAttempts, "max-attempts from " + from
}

func (l *linter) minCalls(s *subject) {
	c := s.r.Config
	if c.SlidingWindowType != breaker.TimeBased || l.opt.Rate <= 0 {
		return
	}
	attempts, from := l.attempts(s)
	calls := l.opt.Rate * float64(c.SlidingWindowSize) * float64(attempts)
	if calls >= float64(c.MinimumNumberOfCalls) {
		return
	}
	key := where(s.r, keyMinimumCalls)
	rate := l.opt.Rate
	l.addFor(s, "time-based-min-calls-unreachable", SeverityWarning, key, l.lineOf(key),
		func(b string) string {
			return fmt.Sprintf("TIME_BASED window of %d s of %s at %g req/s with at most %s per request (%s) holds at most %.0f calls, below minimum-number-of-calls %d (TIME_BASED does not cap it by the window): both rates stay -1 and the breaker never opens.", c.SlidingWindowSize, b, rate, plural(attempts, "attempt"), from, math.Floor(calls), c.MinimumNumberOfCalls)
		},
		fmt.Sprintf("Set minimum-number-of-calls to at most %d, or lengthen sliding-window-size.", max(1, int(math.Floor(calls)))))
}

// NegligiblePassProbability is the half-open pass probability below which lint
// reports that the breaker cannot close (an error): under one trial in a million
// passes, i.e. never in any run an operator would wait for. Exact latency
// distributions give such tiny non-zero chances, e.g. a uniform 100ms-500ms latency
// is at most 100 ms with probability 1/400,000,001.
const NegligiblePassProbability = 1e-6

func (l *linter) halfOpen(s *subject) {
	gw := l.opt.Gateway
	if l.opt.GatewayFor != nil {
		timeout := time.Duration(-1)
		if s.tl.applied && !s.tl.off {
			if tl, _, err := l.f.ResolveTimeLimiter(s.tl.name); err == nil {
				timeout = tl.TimeoutDuration
			}
		}
		gw = l.opt.GatewayFor(s.r.Config, timeout)
	}
	if gw == nil {
		return
	}
	r := s.r
	p := breaker.HalfOpenPassProbability(r.Config, *gw)
	key := where(r, keyPermittedInHalfOpen)
	switch {
	case p < NegligiblePassProbability:
		l.addFor(s, "half-open-trial-cannot-pass", SeverityError, key, l.lineOf(key),
			func(b string) string {
				chance := "no half-open trial keeps"
				if p > 0 {
					chance = fmt.Sprintf("practically no half-open trial (probability %.3g) keeps", p)
				}
				return fmt.Sprintf("%s cannot close while the gateway behaves so: with %s, a failure-rate threshold of %s and a slow-call-rate threshold of %s (slow: above %v), %s both rates below their thresholds.", upperFirst(b), plural(min(r.Config.PermittedNumberOfCallsInHalfOpenState, r.Config.MinimumNumberOfCalls), "deciding trial call"), pct(r.Config.FailureRateThreshold), pct(r.Config.SlowCallRateThreshold), r.Config.SlowCallDurationThreshold, chance)
			},
			"Raise slow-call-duration-threshold above the gateway's normal latency, or the thresholds, so a healthy-enough gateway can pass the trial.")
	case p < 0.5:
		l.addFor(s, "half-open-trial-cannot-pass", SeverityWarning, key, l.lineOf(key),
			func(b string) string {
				return fmt.Sprintf("A half-open trial of %s passes with probability %.3g for this gateway behaviour: the breaker will mostly go back to OPEN and wait %v again.", b, p, r.Config.WaitDurationInOpenState)
			},
			"Raise slow-call-duration-threshold or the rate thresholds, or allow more trial calls.")
	}
}

func upperFirst(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

func (l *linter) healthIndicator() {
	if !l.f.Management().HealthCircuitBreakersEnabled {
		k := "management.health.circuitbreakers.enabled"
		l.add("health-indicator-not-registered", SeverityWarning, k, l.lineOf(k),
			"The circuitBreakers health indicator is off (Spring's default), so /actuator/health says nothing about open breakers.",
			"Set management.health.circuitbreakers.enabled: true.")
	}
}

func (l *linter) registered(s *subject) {
	if s.r.RegisterHealthIndicator {
		return
	}
	k := where(s.r, keyRegisterHealthIndicator)
	l.addFor(s, "health-indicator-not-registered", SeverityWarning, k, l.lineOf(k),
		func(b string) string {
			return fmt.Sprintf("register-health-indicator is false for %s, so the circuitBreakers health component leaves them out.", b)
		},
		"Set register-health-indicator: true under configs.default (it also covers lazily created Feign breakers).")
}

func (l *linter) unmodelled(s *subject) {
	keys := make([]string, 0, len(s.r.Unmodelled))
	for k := range s.r.Unmodelled {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		src, k := s.r.Unmodelled[k], k
		l.addFor(s, "setting-not-modelled", SeverityInfo, src, l.lineOf(src),
			func(b string) string {
				return fmt.Sprintf("%s is in effect for %s but cbprobe's breaker model does not emulate it; predictions ignore it.", k, b)
			},
			"Treat predictions for this breaker as approximate.")
	}
}

func (l *linter) retryRejections(s *subject) {
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
	rt, src, err := l.f.ResolveRetry(s.rt.name)
	if err != nil {
		return
	}
	attempts := rt.MaxAttempts
	if s.rt.applied {
		attempts, _ = l.attempts(s)
	}
	if attempts <= 1 {
		return
	}
	if rt.Retryable != nil && !rt.Retryable(&breaker.CallNotPermittedError{Name: s.name, State: breaker.StateOpen}) {
		return
	}
	key := src[keyIgnoreExceptions]
	if key == libraryDefault {
		key = "resilience4j.retry.configs.default.ignore-exceptions"
		if p, ok := l.hasEntry(sectionRetry, s.rt.name); ok {
			key = p + ".ignore-exceptions"
		}
	}
	what := "Retry"
	if l.opt.RetryName != "" {
		what = fmt.Sprintf("Retry %q", l.opt.RetryName)
	}
	sev, assume := dependent(s.rt, SeverityWarning, what)
	l.addFor(s, "retry-retries-rejections", sev, key, l.lineOf(key),
		func(b string) string {
			return assume + fmt.Sprintf("The retry around %s (up to %d attempts) retries CallNotPermittedException: once the breaker is OPEN each request spins through its attempts, and in HALF_OPEN retries spend the trial permits.", b, attempts)
		},
		"Add io.github.resilience4j.circuitbreaker.CallNotPermittedException to the retry's ignore-exceptions.")
}

// backoff finds back-off settings that Spring never applies: resilience4j reads
// exponential-backoff-multiplier (and the max wait) only from an entry that also sets
// enable-exponential-backoff: true and its wait duration, and randomized-wait-factor only
// with enable-randomized-wait: true (CommonRetryConfigurationProperties,
// CommonCircuitBreakerConfigurationProperties).
func (l *linter) backoff() {
	type rule struct {
		section, id, enable, wait string
		settings                  []string
	}
	rules := []rule{
		{sectionRetry, "exponential-backoff-not-enabled", keyEnableExponentialBackoff, keyWaitDuration, []string{keyExponentialMultiplier, keyExponentialMaxWait}},
		{sectionRetry, "randomized-wait-not-enabled", keyEnableRandomizedWait, keyWaitDuration, []string{keyRandomizedWaitFactor}},
		{sectionCircuitBreaker, "exponential-backoff-not-enabled", keyEnableExponentialBackoff, keyWaitInOpen, []string{keyExponentialMultiplier, keyExponentialMaxWaitInOpen}},
		{sectionCircuitBreaker, "randomized-wait-not-enabled", keyEnableRandomizedWait, keyWaitInOpen, []string{keyRandomizedWaitFactor}},
	}
	for _, ru := range rules {
		s := l.f.sections[ru.section]
		for _, in := range s.order {
			for _, k := range ru.settings {
				st := in.settings[k]
				if st == nil {
					continue
				}
				en := in.settings[ru.enable]
				w := in.settings[ru.wait]
				waitSet := w != nil && (ru.wait == keyWaitDuration && w.val.d >= 0 || w.val.d >= time.Millisecond)
				switch {
				case en == nil || !en.val.b:
					state := "is not set"
					if en != nil {
						state = "is false"
					}
					l.add(ru.id, SeverityWarning, st.key, st.line,
						fmt.Sprintf("%s is set but %s %s in the same entry, so resilience4j never applies it: the wait stays fixed.", k, ru.enable, state),
						fmt.Sprintf("Add %s: true beside it (with %s), or remove %s.", ru.enable, ru.wait, k))
				case !waitSet:
					l.add(ru.id, SeverityWarning, st.key, st.line,
						fmt.Sprintf("%s is set but %s is not set in the same entry, and resilience4j builds the back-off only from an entry that sets both; this entry's wait comes from its base config unchanged.", k, ru.wait),
						fmt.Sprintf("Set %s in the same entry.", ru.wait))
				}
			}
		}
	}
}

// feignBulkhead warns when Spring Cloud CircuitBreaker runs the Feign calls on a
// thread-pool bulkhead the file does not size (Resilience4jBulkheadProvider, on by default
// whenever resilience4j-bulkhead is on the classpath, which the Resilience4j starter puts
// there): ThreadPoolBulkheadConfig's defaults follow the CPU count, and the TimeLimiter's
// clock starts when the call is queued (measured on examples/spring-commerce, docs/spring-parity.md).
func (l *linter) feignBulkhead() {
	if !l.feign.enabled {
		return
	}
	for _, off := range []struct {
		key  string
		when bool
	}{
		{"spring.cloud.circuitbreaker.resilience4j.disable-thread-pool", true},
		{"spring.cloud.circuitbreaker.bulkhead.resilience4j.enabled", false},
		{"spring.cloud.circuitbreaker.resilience4j.enable-semaphore-default-bulkhead", true},
	} {
		if v, set, _ := l.f.boolProp(off.key); set && v == off.when {
			return
		}
	}
	for _, k := range []string{"core-thread-pool-size", "max-thread-pool-size"} {
		if _, ok := l.f.Get("resilience4j.thread-pool-bulkhead.configs.default." + k); ok {
			return
		}
	}
	l.add("thread-pool-bulkhead-sized-by-cpus", SeverityWarning, "resilience4j.thread-pool-bulkhead.configs.default", 0,
		"Spring Cloud CircuitBreaker runs every Feign call on a Resilience4j thread-pool bulkhead, and this file does not size it: "+
			"the pool follows the machine's CPU count (core = CPUs - 1, max = CPUs, queue 100), one thread on a 2-core host. "+
			"A call waiting for a thread is already on the TimeLimiter's clock, so under concurrent load calls time out in the queue "+
			"and the breaker opens on the CPU count, not on the gateway.",
		"Set resilience4j.thread-pool-bulkhead.configs.default.core-thread-pool-size and max-thread-pool-size to the concurrency "+
			"you expect (requests per second × the slowest answer in seconds), or spring.cloud.circuitbreaker.bulkhead.resilience4j.enabled: false.")
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
