package collect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/cbprobe/cbprobe/breaker"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/demo"
)

const prometheusBin = "/usr/bin/prometheus"

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startPrometheus runs the Debian prometheus binary scraping target every
// second and returns its URL; it is killed when the test ends.
func startPrometheus(t *testing.T, target string) string {
	t.Helper()
	if _, err := os.Stat(prometheusBin); err != nil {
		t.Fatalf("%s is required (scripts/test-deps.sh installs it): %v", prometheusBin, err)
	}
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: shop
    metrics_path: /actuator/prometheus
    static_configs:
      - targets: ['%s']
`, u.Host)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	var logs bytes.Buffer
	cmd := exec.Command(prometheusBin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port), "--log.level=warn")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start prometheus: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("prometheus output:\n%s", logs.String())
		}
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(base + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return base
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("prometheus did not become ready:\n%s", logs.String())
	return ""
}

// TestPromAPIMatchesActuator drives the demo service's breaker open twice (by
// failure rate, then by slow-call rate) and checks that a real Prometheus
// server's query API shows the same CLOSED->OPEN transitions with the same
// causes as the actuator does.
func TestPromAPIMatchesActuator(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svc, err := demo.New(demo.Config{Seed: 1}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(ctx, "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer svc.Close(context.Background())
	cb, err := svc.Breaker()
	if err != nil {
		t.Fatal(err)
	}
	name := cb.Name()
	prom := startPrometheus(t, svc.URL())

	act := NewActuator(svc.URL(), HTTPOptions{})
	api, err := NewPromAPI(prom, `job="shop"`, HTTPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Wait until Prometheus has scraped the breaker.
	deadline := time.Now().Add(15 * time.Second)
	for {
		s, err := api.Poll(ctx)
		if err == nil && len(s.Breakers) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("prom-api never saw the breaker: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The reference thresholds (application.yml of the demo): 60 % and 50 %.
	th := StaticThresholds(map[string]Threshold{"": {FailureRate: 60, SlowCallRate: 50, Source: "reference config"}})
	run := func(src Source, interval time.Duration, out *[]Transition, wg *sync.WaitGroup, sctx context.Context) {
		defer wg.Done()
		s, err := NewSampler(SamplerConfig{Source: src, Interval: interval, Thresholds: th})
		if err != nil {
			t.Error(err)
			return
		}
		s.Run(sctx, func(Update) {})
		*out = s.Tracker().Transitions()
	}
	sctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var fromAct, fromAPI []Transition
	wg.Add(2)
	go run(act, 100*time.Millisecond, &fromAct, &wg, sctx)
	go run(api, 250*time.Millisecond, &fromAPI, &wg, sctx)

	hold := 3500 * time.Millisecond // > 3 scrape intervals
	time.Sleep(hold)
	// 1. 13 fast failures and 7 fast successes: failure rate 65 % >= 60 %.
	for i := range 20 {
		if i < 13 {
			cb.OnError(10*time.Millisecond, errors.New("boom"))
		} else {
			cb.OnSuccess(10 * time.Millisecond)
		}
	}
	time.Sleep(hold)
	closeBreaker(t, svc.URL(), name)
	time.Sleep(hold)
	// 2. 12 slow and 8 fast successes: slow-call rate 60 % >= 50 %, no failures.
	for i := range 20 {
		if i < 12 {
			cb.OnSuccess(200 * time.Millisecond)
		} else {
			cb.OnSuccess(10 * time.Millisecond)
		}
	}
	time.Sleep(hold)
	stop()
	wg.Wait()

	opens := func(ts []Transition) []string {
		var out []string
		for _, tr := range ts {
			if tr.From == "CLOSED" && tr.To == "OPEN" {
				out = append(out, string(tr.Cause))
			}
		}
		return out
	}
	want := []string{string(breaker.CauseFailureRate), string(breaker.CauseSlowCallRate)}
	if got := opens(fromAct); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("actuator: CLOSED->OPEN causes %v, want %v; transitions %+v", got, want, fromAct)
	}
	if got := opens(fromAPI); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("prom-api: CLOSED->OPEN causes %v, want %v; transitions %+v", got, want, fromAPI)
	}
	seq := func(ts []Transition) string {
		var s []string
		for _, tr := range ts {
			s = append(s, tr.From+">"+tr.To)
		}
		return strings.Join(s, " ")
	}
	if seq(fromAct) != seq(fromAPI) {
		t.Errorf("transition sequences differ:\nactuator %s\nprom-api %s", seq(fromAct), seq(fromAPI))
	}
	for _, tr := range fromAPI {
		if tr.TimeSource != TimeFromPoll || tr.Evidence.ThresholdSource != "reference config" && tr.Cause != "" {
			t.Errorf("prom-api transition %+v: want poll time and config thresholds", tr)
		}
	}
	for _, tr := range fromAct {
		if tr.TimeSource != TimeFromEvent {
			t.Errorf("actuator transition %+v: want event time", tr)
		}
	}
}

func closeBreaker(t *testing.T, base, name string) {
	t.Helper()
	resp, err := http.Post(base+"/actuator/circuitbreakers/"+url.PathEscape(name), "application/json", strings.NewReader(`{"updateState":"CLOSE"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("close breaker: HTTP %d", resp.StatusCode)
	}
}
