package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/demo"
	"github.com/cbprobe/cbprobe/results"
	"github.com/cbprobe/cbprobe/springconf"
)

// The Debian programs the fleet test runs (scripts/test-deps.sh installs them).
const (
	nginxBin      = "/usr/sbin/nginx"
	prometheusBin = "/usr/bin/prometheus"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startProgram runs a Debian server program until the test ends and waits until
// ready answers 200; its output is logged when the test fails.
func startProgram(t *testing.T, bin string, ready string, args ...string) {
	t.Helper()
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is required (scripts/test-deps.sh installs it): %v", bin, err)
	}
	// Output goes to a file, not a pipe: a worker process that outlives its
	// master (nginx) would hold a pipe open and block Wait.
	logPath := filepath.Join(t.TempDir(), filepath.Base(bin)+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	logs := func() string {
		b, _ := os.ReadFile(logPath)
		return string(b)
	}
	t.Cleanup(func() {
		// SIGTERM: nginx's master stops its workers (a kill would orphan them).
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		_ = logFile.Close()
		if t.Failed() {
			t.Logf("%s output:\n%s", bin, logs())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(ready); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s did not answer %s:\n%s", bin, ready, logs())
}

// startNginx runs nginx as a round-robin load balancer in front of the replicas
// and returns its URL. Failed upstream calls are not retried on another replica
// (proxy_next_upstream off): the entry point shows what the replica answered.
func startNginx(t *testing.T, replicas []string) string {
	t.Helper()
	dir := t.TempDir()
	addr := freeAddr(t)
	var servers strings.Builder
	for _, r := range replicas {
		u, err := url.Parse(r)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&servers, "    server %s;\n", u.Host)
	}
	conf := fmt.Sprintf(`worker_processes 1;
daemon off;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  upstream replicas {
%[2]s    keepalive 32;
  }
  server {
    listen %[3]s;
    location / {
      proxy_pass http://replicas;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_next_upstream off;
    }
    location = /nginx-ready { return 200 "ok"; }
  }
}
`, dir, servers.String(), addr)
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	startProgram(t, nginxBin, "http://"+addr+"/nginx-ready", "-p", dir, "-c", path, "-e", filepath.Join(dir, "error.log"))
	return "http://" + addr
}

// startFleetPrometheus runs Prometheus scraping every replica's
// /actuator/prometheus each 250 ms (each replica is its own instance label).
func startFleetPrometheus(t *testing.T, replicas []string) string {
	t.Helper()
	dir := t.TempDir()
	var targets []string
	for _, r := range replicas {
		u, err := url.Parse(r)
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, "'"+u.Host+"'")
	}
	cfg := fmt.Sprintf(`global:
  scrape_interval: 250ms
  scrape_timeout: 200ms
scrape_configs:
  - job_name: shop
    metrics_path: /actuator/prometheus
    static_configs:
      - targets: [%s]
`, strings.Join(targets, ", "))
	path := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	startProgram(t, prometheusBin, "http://"+addr+"/-/ready", "--config.file="+path, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	// Ready is not scraping: Prometheus hands targets to its scrape loops up to 5 s
	// after start (its discovery manager batches updates). Wait for every target's
	// first scrape, so the run does not begin with the breakers unobserved.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var body struct {
			Data struct {
				ActiveTargets []struct {
					Health string `json:"health"`
				} `json:"activeTargets"`
			} `json:"data"`
		}
		if resp, err := http.Get("http://" + addr + "/api/v1/targets?state=active"); err == nil {
			err = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			up := 0
			for _, tg := range body.Data.ActiveTargets {
				if tg.Health == "up" {
					up++
				}
			}
			if err == nil && up == len(replicas) {
				return "http://" + addr
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("prometheus did not scrape the %d replicas within 30 s", len(replicas))
	return ""
}

// TestExperimentFleetBehindNginx runs the window-type experiment's count-based
// arm against three reference-service replicas (one shared database, one
// shared gateway: the experiment's pgsim) behind nginx, reading the breakers
// from a real Prometheus that scrapes every replica. Each replica's breaker is
// reported on its own with the cause of its OPEN; the fleet view counts the
// replicas OPEN and the share refused at the entry point.
func TestExperimentFleetBehindNginx(t *testing.T) {
	pgListen := freeAddr(t)
	base, err := springconf.LoadOrReference("")
	if err != nil {
		t.Fatal(err)
	}
	// The arm's setting, as an operator deploys it on every replica.
	file, err := base.Overlay("count-based replicas", map[string]string{
		"resilience4j.circuitbreaker.configs.default.sliding-window-type": "COUNT_BASED",
		"pg.base-url": "http://" + pgListen,
	})
	if err != nil {
		t.Fatal(err)
	}
	orders := demo.NewOrderStore()
	var urls []string
	for i := range 3 {
		svc, err := demo.New(demo.Config{Spring: file, Seed: int64(200 + i), Orders: orders}, nil)
		if err != nil {
			t.Fatalf("demo.New: %v", err)
		}
		if err := svc.Start(context.Background(), "127.0.0.1:0"); err != nil {
			t.Fatalf("demo start: %v", err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = svc.Close(ctx)
		})
		urls = append(urls, svc.URL())
	}
	lb := startNginx(t, urls)
	prom := startFleetPrometheus(t, urls)
	dir := filepath.Join(t.TempDir(), "run")
	_, stderr, code := runCLI(context.Background(), "experiment", "run", filepath.Join("testdata", "fleet", "window-type-fleet.yaml"), "--target", lb,
		"--pg-listen", pgListen, "--prom-api", prom, "--selector", `job="shop"`, "--out", dir, "--color", "never", "-q")
	if code == 2 || code > 3 {
		t.Fatalf("experiment exit %d\n%s", code, stderr)
	}
	rec, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	a := rec.Run.Arm("count-based")
	if a == nil || a.Fleet == nil || len(a.Fleet.Instances) != 3 {
		t.Fatalf("arm %+v: want a fleet of three replicas", a)
	}
	for _, in := range a.Fleet.Instances {
		// Every success of the gateway (100–500 ms) is slower than 100 ms and 40 %
		// of the calls fail: a replica's first OPEN is mostly by the slow-call rate;
		// a window of 20 holds 12 or more failures with probability 0.057
		// (binomial, p = 0.4; more with timeouts on a loaded machine), and then the
		// cause is failure-rate or both. Any rate cause is right. Prometheus carries no
		// events, so the cause comes from the first OPEN sample's rates, scraped up
		// to 250 ms after the trip; calls still in flight then are recorded into the
		// OPEN breaker's window (Resilience4j's OPEN state keeps recording them) and
		// can move both rates under their thresholds: cbprobe then says "unknown",
		// which is right for that evidence (seen once in a make test run).
		if in.FirstOpenRequest == 0 {
			t.Errorf("instance %s never opened", in.Breaker)
			continue
		}
		switch in.FirstOpenCause {
		case "slow-call-rate", "both", "failure-rate":
		case "unknown":
			ev := firstOpenEvidence(a, in.Breaker)
			if ev == nil || ev.FailureRate < 0 || ev.FailureRate >= 60 || ev.SlowCallRate >= 50 {
				t.Errorf("instance %s: first OPEN by unknown with evidence %+v; unknown is right only when the sample's rates are below both thresholds", in.Breaker, ev)
			}
			t.Logf("instance %s: first OPEN sample below both thresholds (%+v): cause unknown", in.Breaker, ev)
		default:
			t.Errorf("instance %s: first OPEN at request %d by %q; want a rate cause", in.Breaker, in.FirstOpenRequest, in.FirstOpenCause)
		}
	}
	if a.Fleet.MaxOpen < 2 || a.Fleet.RefusedShare <= 0 {
		t.Errorf("fleet: at most %d OPEN at once, %.3f refused; want the replicas open together and refusals at the entry point", a.Fleet.MaxOpen, a.Fleet.RefusedShare)
	}
	// The prediction for three replicas (spec replicas: 3): each replica's first
	// OPEN inside the band of the simulated replicas, and the fleet's refused
	// share inside its band. A comparison made inconclusive by a load generator
	// that fell behind is not a verdict either way, and is reported as such.
	replicaBands, refused := 0, false
	for _, c := range a.Comparisons {
		switch {
		case strings.HasPrefix(c.Metric, "replica "):
			replicaBands++
		case c.Metric == "rejected share":
			refused = true
		default:
			continue
		}
		if c.OutsideBand {
			t.Errorf("%s: measured %v outside the predicted [%v, %v] (%s)", c.Metric, c.Measured, c.PredictedP5, c.PredictedP95, c.Note)
		}
		t.Logf("%s: measured %v, predicted [%v, %v], inconclusive %v", c.Metric, c.Measured, c.PredictedP5, c.PredictedP95, c.Inconclusive)
	}
	if replicaBands != 3 || !refused {
		t.Errorf("%d per-replica comparisons and refused share %v; want 3 and the fleet's refused share: %+v", replicaBands, refused, a.Comparisons)
	}
	if t.Failed() {
		summary, _ := os.ReadFile(filepath.Join(dir, "summary.md"))
		t.Logf("summary.md:\n%s", summary)
		if keep := os.Getenv("CBPROBE_KEEP_RUN"); keep != "" {
			_ = os.CopyFS(keep, os.DirFS(dir))
		}
	}
}

// firstOpenEvidence is the evidence of breaker's first CLOSED→OPEN in arm.
func firstOpenEvidence(a *results.Arm, breaker string) *results.Evidence {
	for i := range a.Transitions {
		if tr := &a.Transitions[i]; tr.Breaker == breaker && tr.From == "CLOSED" && tr.To == "OPEN" {
			return &tr.Evidence
		}
	}
	return nil
}
