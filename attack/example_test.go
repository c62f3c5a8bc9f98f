package attack_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/cbprobe/cbprobe/attack"
)

func ExampleParsePhases() {
	phases, err := attack.ParsePhases("burst=15/s:5s,0/s:15s,900/m:8s")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range phases {
		fmt.Printf("%-7s %5.1f req/s for %-4s -> %d requests\n", p.Name, p.Rate, p.Duration, p.Planned())
	}
	_, err = attack.ParsePhases("15/s:5s,0/x:15s")
	fmt.Println(err)
	// Output:
	// burst    15.0 req/s for 5s   -> 75 requests
	// phase2    0.0 req/s for 15s  -> 0 requests
	// phase3   15.0 req/s for 8s   -> 120 requests
	// phase 2 "0/x:15s": unknown rate unit x (want s or m)
}

func ExampleRun() {
	// A stand-in for the reference service: orders get an id, payments are
	// refused as if the breaker were open.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/orders" {
			_, _ = io.WriteString(w, `{"orderId":"ord-1"}`)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"code":"CIRCUIT_OPEN"}`)
	}))
	defer srv.Close()

	cfg := attack.Config{Target: srv.URL, Users: 1, Requests: 2, RunID: "demo"}
	sum, err := attack.Run(context.Background(), cfg, func(r attack.Result) {
		fmt.Printf("#%d %s user %d: %d %s %s (%d steps)\n", r.Seq, r.OrderID, r.User, r.Status, r.Error, r.Body, len(r.Steps))
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ps := sum.Phases[0]
	fmt.Printf("%s: planned %d sent %d failed %d\n", ps.Name, ps.Planned, ps.Sent, ps.Failed)
	// Output:
	// #1 demo-000001 user 1: 503 pay: 503 Service Unavailable {"code":"CIRCUIT_OPEN"} (2 steps)
	// #2 demo-000002 user 1: 503 pay: 503 Service Unavailable {"code":"CIRCUIT_OPEN"} (2 steps)
	// sequential: planned 2 sent 2 failed 2
}
