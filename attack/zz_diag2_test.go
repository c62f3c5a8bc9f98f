package attack

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"
)

func TestZZStall(t *testing.T) {
	for _, st := range []time.Duration{300 * time.Millisecond, 1900 * time.Millisecond, 2100 * time.Millisecond} {
		rec := &recorder{}
		srv := httptest.NewServer(rec)
		var col collector
		cfg := Config{Target: srv.URL, Flow: getFlow(t), Phases: mustPhases(t, "200/s:2s,0/s:500ms,200/s:2s"),
			stall: func(i int) {
				if i == 2 {
					time.Sleep(st)
				}
			}}
		sum, err := Run(context.Background(), cfg, col.emit)
		if err != nil {
			t.Fatal(err)
		}
		for _, ps := range sum.Phases {
			t.Logf("stall %s: %s sent %d dropped %d late %d", st, ps.Name, ps.Sent, ps.Dropped, ps.Late)
		}
		srv.Close()
	}
}
