package springcommerce

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/demo"
	"github.com/cbprobe/cbprobe/pgsim"
	"github.com/cbprobe/cbprobe/springconf"
)

// applicationYML is the example's configuration; the demo reads the same file.
const applicationYML = "src/main/resources/application.yml"

// parityDoc lists the deliberate differences the allow-list below names.
const parityDoc = "docs/spring-parity.md"

// gatewaySeed makes both gateways draw the same outcomes for the same order of attempts.
const gatewaySeed = 11

// retryWait shortens the retry's wait on both sides (same key, same meaning) to keep the
// test short; the configured 500 ms changes nothing in the outputs' shape.
const retryWait = "50ms"

// Report naming (alphanumeric ids disabled, the example's default) and OpenFeign's default.
const (
	reportName       = "PgPaymentClient#requestPayment(String,PaymentRequest)"
	alphanumericName = "PgPaymentClientrequestPaymentStringPaymentRequest"
)

// deliberate are the schema lines a real Spring service shows and the demo does not (or the
// reverse) on purpose, by line prefix; each reason is a section of docs/spring-parity.md.
var deliberate = map[string]string{
	"/actuator/health components.diskSpace":          "health contributors that describe the host, not a breaker",
	"/actuator/health components.ssl":                "health contributors that describe the host, not a breaker",
	"/actuator/health components.refreshScope":       "health contributors of Spring Cloud's context, not a breaker",
	"/actuator/health components.discoveryComposite": "health contributors of Spring Cloud's context, not a breaker",
	// A family whose meters have different descriptions gets the description of whichever meter
	// the registry iterates first, which changes with the breaker's name (measured: report naming
	// and alphanumeric naming print different HELP lines for the retry and time limiter).
	"prometheus resilience4j_circuitbreaker_buffered_calls HELP":    "HELP depends on the meters' hash order",
	"prometheus resilience4j_circuitbreaker_slow_calls HELP":        "HELP depends on the meters' hash order",
	"prometheus resilience4j_circuitbreaker_calls_seconds HELP":     "HELP depends on the meters' hash order",
	"prometheus resilience4j_circuitbreaker_calls_seconds_max HELP": "HELP depends on the meters' hash order",
	"prometheus resilience4j_retry_calls_total HELP":                "HELP depends on the meters' hash order",
	"prometheus resilience4j_timelimiter_calls_total HELP":          "HELP depends on the meters' hash order",
}

func allowed(line string) bool {
	for p := range deliberate {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}

// runDemo drives the demo (embedded gateway) configured by the example's application.yml,
// answering as Spring Boot 4 when boot4.
func runDemo(t *testing.T, boot4 bool) observed {
	t.Helper()
	f, err := springconf.Load(applicationYML)
	if err != nil {
		t.Fatalf("load %s: %v", applicationYML, err)
	}
	f, err = f.Overlay("parity test", map[string]string{"pg.retry-wait": retryWait})
	if err != nil {
		t.Fatalf("overlay pg.retry-wait: %v", err)
	}
	svc, err := demo.New(demo.Config{Spring: f, EmbeddedGateway: true, Seed: gatewaySeed,
		Gateway: pgsim.Config{Seed: gatewaySeed}, Boot4: boot4}, nil)
	if err != nil {
		t.Fatalf("demo with %s: %v", applicationYML, err)
	}
	ctx := context.Background()
	if err := svc.Start(ctx, "127.0.0.1:0"); err != nil {
		t.Fatalf("start demo: %v", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := svc.Close(cctx); err != nil {
			t.Errorf("close demo: %v", err)
		}
	}()
	return newDriver(t, target{name: "demo", url: svc.URL(), gw: svc.Gateway()}).run()
}

// startGateway starts a seeded pgsim for a service on port, closed when the test ends.
func startGateway(t *testing.T, port int) *pgsim.Server {
	t.Helper()
	gw, err := pgsim.New(pgsim.Config{Seed: gatewaySeed, CallbackPrefix: fmt.Sprintf("http://localhost:%d", port)}, nil)
	if err != nil {
		t.Fatalf("pgsim: %v", err)
	}
	ctx := context.Background()
	if err := gw.Start(ctx, "127.0.0.1:0"); err != nil {
		t.Fatalf("start pgsim: %v", err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = gw.Close(cctx)
	})
	return gw
}

// runJar starts a jar against its own pgsim and drives it.
func runJar(t *testing.T, jar string, alphanumeric bool) observed {
	t.Helper()
	port := freePort(t)
	gw := startGateway(t, port)
	appJSON, err := json.Marshal(map[string]any{
		"pg": map[string]any{"base-url": gw.URL(), "retry-wait": retryWait},
		"spring": map[string]any{"cloud": map[string]any{"openfeign": map[string]any{"circuitbreaker": map[string]any{
			"alphanumeric-ids": map[string]any{"enabled": alphanumeric}}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	svc := startJava(t, jar, port, string(appJSON))
	obs := newDriver(t, target{name: jar, url: svc.url, gw: gw}).run()
	obs.notes = append(obs.notes, fmt.Sprintf("started in %v", svc.started.Round(100*time.Millisecond)))
	return obs
}

// TestSchemaParity drives the demo and the real service (Boot 3 and Boot 4, report naming;
// Boot 3 with OpenFeign's default alphanumeric naming) through the same traffic and compares
// the shape of every actuator endpoint cbprobe reads, the event types, and the resilience4j
// Prometheus families (TYPE, HELP, label keys and values).
func TestSchemaParity(t *testing.T) {
	if _, err := os.Stat(applicationYML); err != nil {
		t.Fatalf("%s: %v", applicationYML, err)
	}
	demoObs := map[string]observed{"boot3": runDemo(t, false), "boot4": runDemo(t, true)}
	for gen, o := range demoObs {
		if o.breaker != reportName {
			t.Fatalf("demo (%s)'s breaker is %q, want %q", gen, o.breaker, reportName)
		}
	}
	cases := []struct {
		name, gen    string
		alphanumeric bool
		wantBreaker  string
	}{
		{"boot3", "boot3", false, reportName},
		{"boot4", "boot4", false, reportName},
		{"boot3-alphanumeric-ids", "boot3", true, alphanumericName},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obs := runJar(t, jarPath(t, c.gen), c.alphanumeric)
			t.Logf("%s: breaker %q; %s", c.name, obs.breaker, strings.Join(obs.notes, "; "))
			if obs.breaker != c.wantBreaker {
				t.Errorf("breaker name %q, want %q (Spring Cloud OpenFeign's name for the Feign method)", obs.breaker, c.wantBreaker)
			}
			onlyDemo, onlySpring := diffSchemas(demoObs[c.gen].schema, obs.schema, allowed)
			if len(onlyDemo)+len(onlySpring) > 0 {
				t.Errorf("demo and %s differ (fix the demo, or list a deliberate difference with its reason in %s and in `deliberate`):\n"+
					"--- only in the demo (%d):\n%s\n+++ only in real Spring (%d):\n%s",
					c.name, parityDoc, len(onlyDemo), strings.Join(onlyDemo, "\n"), len(onlySpring), strings.Join(onlySpring, "\n"))
			}
		})
	}
}
