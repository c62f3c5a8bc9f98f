package sim

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/attack"
)

// TestValidateBoundsPlannedRequests: an arm planning more than MaxRequestsPerRun
// requests is refused by Validate (and so by Run and Predict) with an *ArmError
// naming the limit, before anything is allocated; products and sums that would
// overflow an int are refused too, never wrapped around.
func TestValidateBoundsPlannedRequests(t *testing.T) {
	seq := func(users, per int) Arm {
		a := referenceArm(3)
		a.Users, a.RequestsPerUser = users, per
		return a
	}
	open := func(phases string) Arm {
		a := referenceArm(3)
		a.Users, a.RequestsPerUser = 0, 0
		p, err := attack.ParsePhases(phases)
		if err != nil {
			t.Fatalf("ParsePhases(%q): %v", phases, err)
		}
		a.Phases = p
		return a
	}
	limit := strconv.Itoa(MaxRequestsPerRun)
	many := strings.Repeat("1000000/s:2562047h,", 40) + "1/s:1s"
	cases := []struct {
		name  string
		arm   Arm
		field string
		msg   string // in the message
	}{
		{"100000 users x 1e9 requests", seq(100_000, 1_000_000_000), "RequestsPerUser", limit},
		{"1e9 users", seq(1_000_000_000, 1), "Users", limit},
		{"product overflows int", seq(1<<40, 1<<40), "Users", limit},
		{"1/s for 10000h", open("1/s:10000h"), "Phases", "36000000 requests"},
		{"total duration overflows", open(many), "Phases", "longer than"},
		{"one over the limit", open(strconv.Itoa(MaxRequestsPerRun) + "/s:1s,1/s:1s"), "Phases", "1000001 requests"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.arm.Validate()
			var ae *ArmError
			if !errors.As(err, &ae) {
				t.Fatalf("Validate = %v, want an *ArmError", err)
			}
			if !strings.HasPrefix(ae.Field, tc.field) || !strings.Contains(ae.Msg, tc.msg) {
				t.Fatalf("Validate = %v, want field %s and %q in the message", err, tc.field, tc.msg)
			}
			if _, err := Run(tc.arm, 1); !errors.As(err, &ae) {
				t.Fatalf("Run = %v, want an *ArmError", err)
			}
			if _, err := Predict(context.Background(), tc.arm, 10, 1); !errors.As(err, &ae) {
				t.Fatalf("Predict = %v, want an *ArmError", err)
			}
		})
	}
	// At the limit the arm is valid.
	atLimit := open(limit + "/s:1s")
	if err := atLimit.Validate(); err != nil {
		t.Fatalf("an arm of exactly MaxRequestsPerRun requests: %v", err)
	}
}

// TestPredictRunsCappedByBudget: Predict simulates at most MaxPredictRequests
// requests in all: PredictRuns caps the number of runs and Predict says so.
func TestPredictRunsCappedByBudget(t *testing.T) {
	a := referenceArm(3)
	a.Users, a.RequestsPerUser = 1, 40
	cases := []struct {
		name         string
		perRun, runs int
		want         int
	}{
		{"small arm keeps its runs", 40, 1000, 1000},
		{"largest arm", MaxRequestsPerRun, 1000, MaxPredictRequests / MaxRequestsPerRun},
		{"10/s for 24h", 864_000, 1000, MaxPredictRequests / 864_000},
		{"never below one run", MaxRequestsPerRun, 1, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := a
			b.Users, b.RequestsPerUser = 1, tc.perRun
			if got := PredictRuns(&b, tc.runs); got != tc.want {
				t.Fatalf("PredictRuns(%d requests, %d runs) = %d, want %d", tc.perRun, tc.runs, got, tc.want)
			}
		})
	}
	// Predict reports the cap: 40-request runs, asking for more runs than the budget holds.
	runs := MaxPredictRequests/40 + 10
	if got := PredictRuns(&a, runs); got != MaxPredictRequests/40 {
		t.Fatalf("PredictRuns = %d, want %d", got, MaxPredictRequests/40)
	}
}

// TestPredictNotesCappedRuns: a capped prediction says how many runs were asked
// for and why fewer ran.
func TestPredictNotesCappedRuns(t *testing.T) {
	a := referenceArm(3)
	a.Users, a.RequestsPerUser = 1, 40
	p, err := predictWithin(context.Background(), a, 50, 1, 40*20, 2, false)
	if err != nil {
		t.Fatal(err)
	}
	if p.Runs != 20 || p.RequestedRuns != 50 {
		t.Fatalf("Runs = %d, RequestedRuns = %d, want 20 and 50", p.Runs, p.RequestedRuns)
	}
	found := false
	for _, n := range p.Notes {
		if strings.Contains(n, "50 runs") && strings.Contains(n, "20") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no note on the capped runs: %q", p.Notes)
	}
}

// TestPredictStopsOnCancel: cancelling the context stops a prediction inside a
// run, not only between runs. The bound is derived from the load the test gets:
// base is the time one whole run of the same arm takes on this machine just
// before; the prediction asks for 20 such runs (at least 10 base times of work
// on any number of CPUs... more with fewer), so an implementation that checks
// only between runs needs at least one base after the cancel, while checking
// every few thousand events returns in a small fraction of it. The test allows
// base (plus 50 ms of scheduling slack): 100 times what the checks need.
func TestPredictStopsOnCancel(t *testing.T) {
	a := referenceArm(3)
	a.Users, a.RequestsPerUser = 0, 0
	a.Phases = []attack.Phase{{Name: "p", Rate: 1000, Duration: 200 * time.Second}} // 200,000 requests a run
	start := time.Now()
	if _, err := runArm(context.Background(), &a, 1, false); err != nil {
		t.Fatal(err)
	}
	base := time.Since(start)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Predict(ctx, a, 20, 1)
		done <- err
	}()
	time.Sleep(base / 4) // inside the first runs
	cancel()
	cancelled := time.Now()
	err := <-done
	took := time.Since(cancelled)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Predict after cancel = %v, want context.Canceled", err)
	}
	if took > base+50*time.Millisecond {
		t.Fatalf("Predict returned %v after the cancel; one whole run takes %v here", took, base)
	}
}

// TestRunRecyclesRequestSlots: a prediction's runs keep only the requests in
// flight, so their memory does not grow with the planned requests. The slots a
// run allocated are counted by the runner.
func TestRunRecyclesRequestSlots(t *testing.T) {
	a := referenceArm(3)
	a.Users, a.RequestsPerUser = 1, 10_000
	r, err := newRunner(&a, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.loop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r.sent != 10_000 {
		t.Fatalf("sent %d requests, want 10000", r.sent)
	}
	if len(r.reqs) > 2 {
		t.Fatalf("one sequential user used %d request slots, want at most 2", len(r.reqs))
	}
	detail, err := runArm(context.Background(), &a, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	res := r.result()
	if detail.UnobstructedRequests != res.UnobstructedRequests || detail.FirstOpenRequest != res.FirstOpenRequest ||
		detail.GatewayAttempts != res.GatewayAttempts || len(detail.RequestLog) != 10_000 {
		t.Fatalf("recycled run differs from the detailed one: %+v vs %+v", res.FirstOpenRequest, detail.FirstOpenRequest)
	}
}
