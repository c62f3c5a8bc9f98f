package attack

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"
)

func TestZZDiag(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	var col collector
	cfg := Config{Target: srv.URL, Flow: getFlow(t), Phases: mustPhases(t, "200/s:2s,0/s:2s,200/s:2s"), DropAfter: time.Second}
	t0 := time.Now()
	sum, err := Run(context.Background(), cfg, col.emit)
	if err != nil {
		t.Fatal(err)
	}
	res := col.results()
	var maxd [3]time.Duration
	var first [3]time.Duration
	var early, n [3]int
	for _, r := range res {
		d := r.Delay()
		if d > maxd[r.Phase] {
			maxd[r.Phase] = d
		}
		if d < 0 {
			early[r.Phase]++
		}
		if n[r.Phase] == 0 {
			first[r.Phase] = r.Sent.Sub(sum.Phases[r.Phase].Start)
		}
		n[r.Phase]++
	}
	for i, ps := range sum.Phases {
		t.Logf("%s sent %d dropped %d late %d maxdelay %s early %d firstsent +%s", ps.Name, ps.Sent, ps.Dropped, ps.Late, maxd[i], early[i], first[i])
	}
	t.Logf("arrivals %d run %s", len(rec.arrivals()), time.Since(t0))
}
