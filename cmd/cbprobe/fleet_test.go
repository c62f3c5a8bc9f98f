package main

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/demo"
	"github.com/cbprobe/cbprobe/pgsim"
	"github.com/cbprobe/cbprobe/pgsim/behavior"
	"github.com/cbprobe/cbprobe/results"
)

// startReplicas starts n reference-service replicas sharing one order store
// (one database), each with its own embedded gateway, seeded apart.
func startReplicas(t *testing.T, gw behavior.Behavior, n int) []*demo.Service {
	t.Helper()
	orders := demo.NewOrderStore()
	var out []*demo.Service
	for i := range n {
		svc, err := demo.New(demo.Config{Seed: int64(100 + i), EmbeddedGateway: true, Orders: orders, Gateway: pgsim.Config{Behavior: gw}}, nil)
		if err != nil {
			t.Fatalf("demo.New: %v", err)
		}
		if err := svc.Start(context.Background(), "127.0.0.1:0"); err != nil {
			t.Fatalf("demo start: %v", err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = svc.Close(ctx) // a replica the test killed is closed already
		})
		out = append(out, svc)
	}
	return out
}

// roundRobin is a load balancer in front of replicas: request k goes to
// replica k mod N (a dead replica answers 502, as nginx does).
func roundRobin(t *testing.T, replicas []*demo.Service) *httptest.Server {
	t.Helper()
	proxies := make([]*httputil.ReverseProxy, len(replicas))
	for i, r := range replicas {
		u, err := url.Parse(r.URL())
		if err != nil {
			t.Fatal(err)
		}
		proxies[i] = httputil.NewSingleHostReverseProxy(u)
		proxies[i].ErrorLog = log.New(io.Discard, "", 0) // a killed replica's 502s are expected
	}
	var next atomic.Int64
	lb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxies[int(next.Add(1)-1)%len(proxies)].ServeHTTP(w, r)
	}))
	t.Cleanup(lb.Close)
	return lb
}

// TestAttackFleetOfReplicas drives three reference-service replicas behind a
// round-robin balancer and reads each one's actuator (--actuator three times):
// every replica's breaker opens on its own, for the slow-call rate (every
// success of the default gateway is slower than the 100 ms threshold, and 40 %
// failures stay under 60 %), each is reported per instance, and the fleet view
// counts the replicas OPEN and the share refused at the entry point.
func TestAttackFleetOfReplicas(t *testing.T) {
	gw := behavior.DefaultBehavior()
	replicas := startReplicas(t, gw, 3)
	lb := roundRobin(t, replicas)
	dir := filepath.Join(t.TempDir(), "run")
	// 30/s for 4 s: 40 requests per replica, each making about 1.6 attempts, so
	// every replica's 20-call window fills after about 13 of its requests.
	args := []string{"attack", "--target", lb.URL, "--phases", "30/s:4s", "--out", dir, "--color", "never", "-q", "--interval", "50ms"}
	for _, r := range replicas {
		args = append(args, "--actuator", r.URL())
	}
	_, stderr, code := runCLI(context.Background(), args...)
	if code != 0 && code != 1 {
		t.Fatalf("attack exit %d\n%s", code, stderr)
	}
	summary, err := os.ReadFile(filepath.Join(dir, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("summary.md:\n%s", summary)
	rec, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	a := rec.Run.Arms[0]
	if a.Fleet == nil || len(a.Fleet.Instances) != 3 {
		t.Fatalf("fleet %+v, want three instances; breaker %q, notes %q", a.Fleet, a.Breaker, a.Notes)
	}
	if a.Breaker != demo.FeignName {
		t.Errorf("arm breaker %q, want the name on every replica, %q", a.Breaker, demo.FeignName)
	}
	for _, in := range a.Fleet.Instances {
		if in.FirstOpenRequest == 0 || in.FirstOpenCause != "slow-call-rate" {
			t.Errorf("instance %s: first OPEN at request %d by %q, want an OPEN by slow-call-rate", in.Breaker, in.FirstOpenRequest, in.FirstOpenCause)
		}
		if in.Observation == nil || in.Observation.Verdict != results.ObservationConsistent {
			t.Errorf("instance %s: observation %+v, want consistent", in.Breaker, in.Observation)
		}
	}
	if a.Fleet.MaxOpen < 1 || a.Fleet.RefusedShare <= 0 {
		t.Errorf("fleet: max %d OPEN at once, refused share %.3f; want at least one OPEN and refusals", a.Fleet.MaxOpen, a.Fleet.RefusedShare)
	}
	if a.Observation == nil || a.Observation.Verdict == results.VerdictInconclusive {
		t.Errorf("arm observation %+v, want every refusal explained by an OPEN replica", a.Observation)
	}
}

// TestAttackFleetReplicaKilled: a replica stopped mid-run is not dropped from
// the fleet: it stays listed, and its stretch without metrics is reported on
// that instance.
func TestAttackFleetReplicaKilled(t *testing.T) {
	gw := behavior.DefaultBehavior()
	replicas := startReplicas(t, gw, 3)
	lb := roundRobin(t, replicas)
	dir := filepath.Join(t.TempDir(), "run")
	args := []string{"attack", "--target", lb.URL, "--phases", "30/s:4s", "--out", dir, "--color", "never", "-q", "--interval", "50ms"}
	for _, r := range replicas {
		args = append(args, "--actuator", r.URL())
	}
	killed := replicas[2]
	go func() {
		time.Sleep(1500 * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = killed.Close(ctx)
	}()
	_, stderr, code := runCLI(context.Background(), args...)
	if code == 2 || code > 3 {
		t.Fatalf("attack exit %d\n%s", code, stderr)
	}
	rec, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	a := rec.Run.Arms[0]
	if a.Fleet == nil || len(a.Fleet.Instances) != 3 {
		t.Fatalf("fleet %+v, want the killed replica still listed among three", a.Fleet)
	}
	u, _ := url.Parse(killed.URL())
	for _, in := range a.Fleet.Instances {
		if in.Breaker != demo.FeignName+"@"+u.Host {
			continue
		}
		if in.Observation == nil || len(in.Observation.Gaps) == 0 {
			t.Errorf("killed instance %s: observation %+v, want its stretch without metrics reported", in.Breaker, in.Observation)
		}
		return
	}
	t.Errorf("no instance for the killed replica %s in %+v", u.Host, a.Fleet.Instances)
}
