package springcommerce

import (
	"strings"
	"testing"

	"github.com/cbprobe/cbprobe/breaker"
	"github.com/cbprobe/cbprobe/springconf"
)

// TestLintFindsFieldReportTraps lints the example's application.yml, the field report's
// configuration, for the field report's gateway (40 % immediate failures, 60 % successes after
// 100-500 ms, all above the 100 ms slow threshold) at 15 req/s, under both Feign names.
func TestLintFindsFieldReportTraps(t *testing.T) {
	f, err := springconf.Load(applicationYML)
	if err != nil {
		t.Fatalf("load %s: %v", applicationYML, err)
	}
	gateway := breaker.CallOutcomeProbabilities{FastFailure: 0.4, SlowSuccess: 0.6}
	for _, name := range []string{reportName, alphanumericName} {
		t.Run(name, func(t *testing.T) {
			got := map[string]springconf.Finding{}
			var all []string
			for _, fd := range springconf.Lint(f, springconf.LintOptions{BreakerName: name, Gateway: &gateway, Rate: 15}) {
				got[fd.ID] = fd
				all = append(all, fd.String())
			}
			// The traps this file really has.
			for id, why := range map[string]string{
				// TimeLimiter 600 ms > slow threshold 100 ms: a timeout is a failure and a slow call.
				"timeouts-count-as-slow-failures": "the field report's first trap",
				// Every success is slow and 40 % fail: no 5-call trial keeps both rates below 50 %/60 %.
				"half-open-trial-cannot-pass": "the breaker can never close for this gateway",
			} {
				if _, ok := got[id]; !ok {
					t.Errorf("lint did not report %s (%s); findings:\n%s", id, why, strings.Join(all, "\n"))
				}
			}
			// What the example does right: settings under configs.default reach the lazily created
			// Feign breaker, the health indicator is registered and every endpoint is exposed.
			for _, id := range []string{"instance-name-never-matches", "health-indicator-not-registered", "endpoints-not-exposed", "unknown-key"} {
				if fd, ok := got[id]; ok {
					t.Errorf("lint reported %s, which this file does not have: %s", id, fd)
				}
			}
		})
	}
}
