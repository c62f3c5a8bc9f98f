package main

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/cbprobe/cbprobe/collect"
)

// metricsFlags are the breaker-metrics flags `attack`, `experiment` and `watch`
// share: where the breaker is read (--actuator, --prometheus or --prom-api URL;
// `experiment` also takes --metrics KIND for its own target), the selector,
// headers, TLS, the poll interval and the service's configuration. One
// definition, so the three commands spell and check them alike.
type metricsFlags struct {
	kind string // collect.Kind*; "" when no source was named
	url  string // "" with kind set: the target's own endpoint (experiment)
	// fleet holds every --actuator URL when several replicas are read (len > 1).
	fleet    []string
	selector string
	// instanceLabel names the replica label for --prom-api ("" = instance).
	instanceLabel string
	headers       []string
	insecure      bool
	// interval is the poll interval; 0 means the command's default.
	interval time.Duration
	// config is the service's application.yml (thresholds, breaker name).
	config string
}

// sourceURL is the value of --actuator, --prometheus and --prom-api: setting one
// names the source kind and its URL.
type sourceURL struct {
	m    *metricsFlags
	kind string
}

func (s sourceURL) String() string {
	if s.m.kind == s.kind {
		return s.m.url
	}
	return ""
}

func (s sourceURL) Set(v string) error {
	if s.m.kind != "" && s.m.kind != s.kind {
		return fmt.Errorf("a metrics source is already named (%s): use one of --actuator, --prometheus, --prom-api", s.m.kind)
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", v)
	}
	if s.m.kind == s.kind && s.m.url != "" {
		if s.kind != collect.KindActuator {
			return fmt.Errorf("only --actuator is repeatable (one URL per replica)")
		}
		if len(s.m.fleet) == 0 {
			s.m.fleet = []string{s.m.url}
		}
		s.m.fleet = append(s.m.fleet, v)
		return nil
	}
	s.m.kind, s.m.url = s.kind, v
	return nil
}

func (s sourceURL) Type() string { return "URL" }

// register adds the flags to cmd; configHelp says what --config is for in that command.
func (m *metricsFlags) register(cmd *cobra.Command, configHelp string) {
	f := cmd.Flags()
	f.Var(sourceURL{m, collect.KindActuator}, "actuator", "read the breaker from this Spring Boot actuator (service root or its /actuator path); repeat it for each replica of a fleet")
	f.Var(sourceURL{m, collect.KindPrometheus}, "prometheus", "read the breaker by scraping this Prometheus page (e.g. http://127.0.0.1:8080/actuator/prometheus)")
	f.Var(sourceURL{m, collect.KindPromAPI}, "prom-api", "read the breaker through this Prometheus server's query API (e.g. http://127.0.0.1:9090)")
	f.StringVar(&m.selector, "selector", "", `label matchers for --prom-api, e.g. '{job="orders"}'`)
	f.StringVar(&m.instanceLabel, "instance-label", "", "the label that names a replica for --prom-api (default instance)")
	f.StringArrayVar(&m.headers, "header", nil, "header for metrics requests, 'Name: value' (repeatable; values are never printed)")
	f.BoolVar(&m.insecure, "insecure", false, "skip TLS certificate verification of the metrics source")
	f.DurationVar(&m.interval, "interval", 0, "metrics poll interval (default "+collect.DefaultInterval.String()+"; experiment: 100ms of service time)")
	f.StringVar(&m.config, "config", "", configHelp)
}

// registerKind adds `experiment`'s --metrics KIND (the source at its own target)
// and the deprecated --metrics-url.
func (m *metricsFlags) registerKind(cmd *cobra.Command) {
	f := cmd.Flags()
	f.Var(&metricsKind{m}, "metrics", "read the breaker from the target's own endpoint: actuator (default) or prometheus; or name the source's URL with --actuator, --prometheus or --prom-api")
	f.Var(&metricsURL{m}, "metrics-url", "where the --metrics source is")
	_ = f.MarkDeprecated("metrics-url", "use --actuator URL, --prometheus URL or --prom-api URL")
}

// metricsKind is --metrics KIND.
type metricsKind struct{ m *metricsFlags }

func (k *metricsKind) String() string { return k.m.kind }
func (k *metricsKind) Type() string   { return "KIND" }
func (k *metricsKind) Set(v string) error {
	for _, kind := range collect.Kinds() {
		if v == kind {
			if k.m.kind != "" && k.m.kind != v {
				return fmt.Errorf("a metrics source is already named (%s)", k.m.kind)
			}
			k.m.kind = v
			return nil
		}
	}
	return fmt.Errorf("%q is not one of actuator, prometheus, prom-api", v)
}

// metricsURL is the deprecated --metrics-url.
type metricsURL struct{ m *metricsFlags }

func (u *metricsURL) String() string { return u.m.url }
func (u *metricsURL) Type() string   { return "URL" }
func (u *metricsURL) Set(v string) error {
	u.m.url = v
	return nil
}

var _ pflag.Value = sourceURL{}

// check refuses flags that do not go together; usage errors (exit 2).
func (m *metricsFlags) check() error {
	if m.selector != "" && m.kind != collect.KindPromAPI {
		return usageErr(errors.New("--selector goes with --prom-api"))
	}
	if m.instanceLabel != "" && m.kind != collect.KindPromAPI {
		return usageErr(errors.New("--instance-label goes with --prom-api"))
	}
	if m.interval < 0 {
		return usageErr(fmt.Errorf("--interval %v: must be positive", m.interval))
	}
	if _, err := m.header(); err != nil {
		return usageErr(err)
	}
	return nil
}

// header parses --header.
func (m *metricsFlags) header() (http.Header, error) {
	h, err := parseHeaders(m.headers)
	if err != nil {
		return nil, fmt.Errorf("--header: %w", err)
	}
	return h, nil
}

// source builds the named source with opt's other settings (nil when none is
// named). The URL must be known (every command but experiment).
func (m *metricsFlags) source(opt collect.HTTPOptions) (collect.Source, error) {
	if m.kind == "" {
		return nil, nil
	}
	h, err := m.header()
	if err != nil {
		return nil, usageErr(err)
	}
	opt.Headers, opt.Insecure, opt.InstanceLabel = h, m.insecure, m.instanceLabel
	src, err := collect.NewSource(m.kind, m.selector, opt, m.urls()...)
	if err != nil {
		return nil, usageErr(fmt.Errorf("--%s: %w", m.kind, err))
	}
	return src, nil
}

// urls is every URL named for the source: one, or one per replica.
func (m *metricsFlags) urls() []string {
	if len(m.fleet) > 0 {
		return m.fleet
	}
	return []string{m.url}
}

// pollInterval is --interval, or def when unset.
func (m *metricsFlags) pollInterval(def time.Duration) time.Duration {
	if m.interval > 0 {
		return m.interval
	}
	return def
}
