package collect

import "fmt"

// The kinds of metrics source, as the --metrics flag and run.json name them.
const (
	// KindActuator reads /actuator/circuitbreakers and /actuator/circuitbreakerevents.
	KindActuator = "actuator"
	// KindPrometheus scrapes a Prometheus exposition page (/actuator/prometheus).
	KindPrometheus = "prometheus"
	// KindPromAPI queries a Prometheus server's HTTP API.
	KindPromAPI = "prom-api"
)

// Kinds lists the source kinds NewSource accepts.
func Kinds() []string { return []string{KindActuator, KindPrometheus, KindPromAPI} }

// NewSource is the one constructor of a metrics source by kind: the actuator
// at url (service root or actuator base), the Prometheus page at url, or the
// Prometheus server at url queried with selector (label matchers, prom-api only).
// Several actuator URLs make a FleetSource, one replica each, named by
// InstanceName.
func NewSource(kind, selector string, opt HTTPOptions, urls ...string) (Source, error) {
	if selector != "" && kind != KindPromAPI {
		return nil, fmt.Errorf("a selector (%q) goes with the %s source only", selector, KindPromAPI)
	}
	if len(urls) == 0 {
		return nil, fmt.Errorf("metrics source %s: no URL", kind)
	}
	if len(urls) > 1 {
		if kind != KindActuator {
			return nil, fmt.Errorf("metrics source %s: one URL (only the actuator source takes one per replica)", kind)
		}
		names := make([]string, len(urls))
		srcs := make([]Source, len(urls))
		for i, u := range urls {
			names[i], srcs[i] = InstanceName(u), NewActuator(u, opt)
		}
		return NewFleet(names, srcs)
	}
	url := urls[0]
	switch kind {
	case KindActuator:
		return NewActuator(url, opt), nil
	case KindPrometheus:
		return NewPrometheus(url, opt), nil
	case KindPromAPI:
		return NewPromAPI(url, selector, opt)
	}
	return nil, fmt.Errorf("metrics source %q: want one of %v", kind, Kinds())
}
