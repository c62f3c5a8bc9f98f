package runner

import (
	"fmt"
	"strings"

	"github.com/cbprobe/cbprobe/collect"
	"github.com/cbprobe/cbprobe/results"
)

// GatewayRefusedID is the finding every load-running command reports when the
// gateway refused the service's calls as bad requests.
const GatewayRefusedID = "gateway-refused-requests"

// GatewayRefused returns the gateway-refused-requests finding for arm: n
// gateway calls refused as bad requests (4xx), shown by evidence.
func GatewayRefused(arm string, n int, evidence string) results.Finding {
	return results.Finding{ID: GatewayRefusedID, Severity: "error", Arm: arm,
		Title:    fmt.Sprintf("The gateway refused %d payment calls as bad requests (4xx): the breaker counted them as failures that have nothing to do with the gateway's health", n),
		Evidence: []string{evidence},
		Fix:      "check the payment body and X-USER-ID your service sends, and that its callbackUrl starts with the gateway's --callback-prefix (cbprobe pgsim --callback-prefix http://127.0.0.1:PORT when the service is not on 8080)",
		Setting:  "pg.callback-url"}
}

// RefusedByGateway counts the breaker's ERROR events whose error is a 400
// answer of the downstream call (Feign's BadRequest): the service's own
// account of a gateway refusing its requests. watch can call it on the events
// it reads.
func RefusedByGateway(events []collect.Event) int {
	n := 0
	for _, e := range events {
		if e.Kind != collect.KindCircuitBreaker || e.Type != "ERROR" {
			continue
		}
		if strings.Contains(e.ErrorMessage, "FeignException$BadRequest") || strings.Contains(e.ErrorMessage, "[400") {
			n++
		}
	}
	return n
}

// Findings are the findings the runner's evidence shows for any command:
// the gateway refusing the service's calls.
func Findings(o *Outcome, arm string) []results.Finding {
	var out []results.Finding
	if n := RefusedByGateway(o.Recording.Events); n > 0 {
		out = append(out, GatewayRefused(arm, n, fmt.Sprintf("%d breaker ERROR events carry a 400 answer of the gateway (FeignException$BadRequest)", n)))
	}
	return out
}
