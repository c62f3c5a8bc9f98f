package springcommerce

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/cbprobe/cbprobe/collect"
)

// openMetricsAccept is the Accept header Prometheus 2.x/3.x scrapes with.
const openMetricsAccept = "application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.1"

// TestSurfacesOnRealSpring asks both generations of the real service for what no public
// capture showed: an OpenMetrics page (Accept as Prometheus sends it), breakers in
// FORCED_OPEN, DISABLED and METRICS_ONLY, and the Feign breaker's name with '#', parentheses
// and a comma in a label. cbprobe's reader must get every breaker's state from the
// OpenMetrics page and from the plain text page alike.
func TestSurfacesOnRealSpring(t *testing.T) {
	want := map[string]string{"forced": "FORCED_OPEN", "disabled": "DISABLED", "metricsOnly": "METRICS_ONLY", reportName: "CLOSED"}
	for _, gen := range []string{"boot3", "boot4"} {
		t.Run(gen, func(t *testing.T) {
			jar := jarPath(t, gen)
			port := freePort(t)
			gw := startGateway(t, port)
			// Three more breakers, created at start-up (instances.*) in the states to read.
			instances := map[string]any{}
			for name, st := range want {
				if name != reportName {
					instances[name] = map[string]any{"initial-state": st}
				}
			}
			appJSON, err := json.Marshal(map[string]any{
				"pg":           map[string]any{"base-url": gw.URL()},
				"resilience4j": map[string]any{"circuitbreaker": map[string]any{"instances": instances}},
			})
			if err != nil {
				t.Fatal(err)
			}
			svc := startJava(t, jar, port, string(appJSON))
			d := newDriver(t, target{name: gen, url: svc.url, gw: gw})
			d.pay("one payment creates the Feign breaker")
			for _, accept := range []string{openMetricsAccept, "text/plain"} {
				req, err := http.NewRequest(http.MethodGet, svc.url+"/actuator/prometheus", nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Accept", accept)
				resp, err := d.client.Do(req)
				if err != nil {
					t.Fatalf("GET /actuator/prometheus: %v", err)
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("GET /actuator/prometheus (Accept %s): HTTP %d, %v", accept, resp.StatusCode, err)
				}
				om := strings.HasPrefix(accept, "application/openmetrics-text")
				res, err := collect.ParsePrometheusText(body)
				if err != nil {
					t.Fatalf("Accept %s: %v", accept, err)
				}
				if res.OpenMetrics != om {
					t.Errorf("Accept %s: read as OpenMetrics %v, want %v (Content-Type %s)", accept, res.OpenMetrics, om, resp.Header.Get("Content-Type"))
				}
				got := map[string]string{}
				for _, b := range res.Breakers {
					got[b.Name] = b.State
				}
				for name, st := range want {
					if got[name] != st {
						t.Errorf("Accept %s: breaker %q state %q, want %s (read: %v)", accept, name, got[name], st, got)
					}
				}
			}
		})
	}
}
