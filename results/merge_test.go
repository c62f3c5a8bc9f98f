package results

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// shardPlan is a synthetic single-process plan: phases at fixed rates, each
// request's outcome and latency drawn from a fixed seed, one breaker that
// opens at a given time.
type shardPlan struct {
	start  time.Time
	phases []PhaseStats
	seed   uint64
	openAt time.Duration // since start: requests sent after it are rejected
}

// requests returns the plan's requests in intended order, numbered 1..n.
func (p shardPlan) requests() []Request {
	rng := rand.New(rand.NewPCG(p.seed, 1))
	var out []Request
	t0 := p.start
	for _, ph := range p.phases {
		for k := range ph.Planned {
			it := t0.Add(time.Duration(float64(k) / ph.Rate * float64(time.Second)))
			r := Request{Arm: "attack", Seq: len(out) + 1, Phase: ph.Name, Intended: it,
				Sent:    it.Add(time.Duration(rng.IntN(2000)) * time.Microsecond),
				Latency: time.Duration(1+rng.IntN(300_000)) * time.Microsecond}
			switch {
			case it.Sub(p.start) >= p.openAt:
				r.Status, r.Outcome, r.Error = 503, OutcomeRejected, "503 Service Unavailable"
			case rng.IntN(10) < 4:
				r.Status, r.Outcome, r.Error = 500, OutcomeFailed, "500 Internal Server Error"
			default:
				r.Status, r.Outcome = 200, OutcomeSucceeded
			}
			out = append(out, r)
		}
		t0 = t0.Add(ph.Duration)
	}
	return out
}

func (p shardPlan) items(n int) map[string]string {
	var names []string
	for _, ph := range p.phases {
		names = append(names, fmt.Sprintf("%s=%g/s:%s", ph.Name, ph.Rate, ph.Duration))
	}
	return map[string]string{"experiment": "attack", "phases": strings.Join(names, ","), "seed": fmt.Sprint(p.seed), "shards": fmt.Sprint(n)}
}

// transitions is the breaker's one opening, as two shards saw it (the
// second 40 ms later).
func (p shardPlan) transitions() []Transition {
	at := p.start.Add(p.openAt - 5*time.Millisecond)
	return []Transition{
		{At: at, From: "CLOSED", To: "OPEN", Cause: "failure-rate"},
		{At: at.Add(40 * time.Millisecond), From: "CLOSED", To: "OPEN", Cause: "failure-rate"},
	}
}

// writeShards writes the plan as n shard runs under dir (request k of the
// plan to shard k mod n, as attack.Shard splits a phase), each shard's
// requests.csv in answer order (sent + latency), as the runner writes it.
// It returns the shard directories and every request of the plan.
func writeShards(tb testing.TB, dir string, p shardPlan, n int) ([]string, []Request) {
	tb.Helper()
	all := p.requests()
	items := p.items(n)
	var dirs []string
	for i := range n {
		d := filepath.Join(dir, fmt.Sprintf("shard-%d", i))
		w, err := Create(d)
		if err != nil {
			tb.Fatal(err)
		}
		var mine []Request
		arm := Arm{Name: "attack", Thresholds: Thresholds{FailureRate: 60, SlowCallRate: 50}}
		for _, ph := range p.phases {
			arm.Phases = append(arm.Phases, PhaseStats{Name: ph.Name, Rate: ph.Rate, Duration: ph.Duration})
		}
		base := 0
		for pi, ph := range p.phases {
			for k := range ph.Planned {
				if k%n != i {
					continue
				}
				arm.Phases[pi].Planned++
				r := all[base+k]
				r.Seq = len(mine) + 1
				mine = append(mine, r)
			}
			base += ph.Planned
		}
		answered := append([]Request(nil), mine...)
		sortBy(answered, func(r Request) time.Time { return r.Sent.Add(r.Latency) })
		for _, r := range answered {
			w.Request(r)
			arm.Add(r)
		}
		// Both shards saw the opening, shard 1 later; every shard read the
		// same breaker event.
		if i < 2 {
			arm.Transitions = []Transition{p.transitions()[i]}
		}
		w.Event(Event{Time: p.start.Add(p.openAt - 5*time.Millisecond), Arm: "attack", Kind: "circuitbreaker", Breaker: "pg", Type: "STATE_TRANSITION", From: "CLOSED", To: "OPEN"})
		w.Sample(Sample{Arm: "attack", Time: p.start.Add(p.openAt), Breaker: "pg", State: "OPEN", FailureRate: 62, SlowCallRate: Unknown,
			FailureRateThreshold: 60, SlowCallRateThreshold: 50, Buffered: 20, Failed: 13, Slow: -1, SlowFailed: -1, NotPermitted: 3})
		arm.MarkRequests(mine)
		run := &Run{Experiment: "attack", Started: p.start, Ended: p.start.Add(time.Minute), Arms: []Arm{arm},
			Shard: &Shard{Index: i, Count: n, Plan: PlanID(items), PlanItems: items, StartAt: p.start}}
		if err := w.Finish(run); err != nil {
			tb.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	return dirs, all
}

func sortBy(rs []Request, key func(Request) time.Time) {
	for i := 1; i < len(rs); i++ { // insertion sort: the rows are nearly in order
		for j := i; j > 0 && key(rs[j]).Before(key(rs[j-1])); j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
}

func testPlan() shardPlan {
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	return shardPlan{start: start, seed: 7, openAt: 3 * time.Second, phases: []PhaseStats{
		{Name: "burst", Rate: 15, Duration: 5 * time.Second, Planned: 75},
		{Name: "pause", Duration: 15 * time.Second},
		{Name: "after", Rate: 5, Duration: 8 * time.Second, Planned: 40},
	}}
}

// TestMergeIsTheSingleRun merges three shards of a plan and compares the
// result with the plan's requests as one process would have recorded them:
// the same requests in the same order and numbering, the same phase counts,
// first OPEN and first rejected request, latency percentiles.
func TestMergeIsTheSingleRun(t *testing.T) {
	p := testPlan()
	dir := t.TempDir()
	dirs, all := writeShards(t, dir, p, 3)
	out := filepath.Join(dir, "merged")
	run, st, err := Merge(dirs, MergeOptions{Out: out, HTML: true})
	if err != nil {
		t.Fatal(err)
	}
	if st.Requests != len(all) {
		t.Errorf("merged %d requests, want %d", st.Requests, len(all))
	}
	if st.MaxHeld == 0 {
		t.Errorf("no request was held for reordering: the shards' files were in intended order and the reordering went untested")
	}
	rec, err := Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(all, rec.Requests); diff != "" {
		t.Errorf("merged requests.csv differs from the single run's requests (-want +got):\n%s", diff)
	}
	want := Arm{Name: "attack", Transitions: p.transitions()[:1]}
	for _, ph := range p.phases {
		want.Phases = append(want.Phases, PhaseStats{Name: ph.Name, Rate: ph.Rate, Duration: ph.Duration, Planned: ph.Planned})
	}
	for _, r := range all {
		want.Add(r)
	}
	want.MarkRequests(all)
	want.SetLatency(all)
	got := run.Arms[0]
	if got.FirstOpenRequest != want.FirstOpenRequest || got.FirstRejectedRequest != want.FirstRejectedRequest {
		t.Errorf("first OPEN / rejected = %d / %d, want %d / %d", got.FirstOpenRequest, got.FirstRejectedRequest, want.FirstOpenRequest, want.FirstRejectedRequest)
	}
	if want.FirstOpenRequest == 0 || want.FirstRejectedRequest == 0 {
		t.Fatalf("the plan should open and reject: %d / %d", want.FirstOpenRequest, want.FirstRejectedRequest)
	}
	approx := cmp.Comparer(func(a, b float64) bool { return a == b || (a-b)/max(a, b) < 1e-9 && (b-a)/max(a, b) < 1e-9 })
	if diff := cmp.Diff(want.Phases, got.Phases, approx); diff != "" {
		t.Errorf("phases (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want.Latency, got.Latency, approx); diff != "" {
		t.Errorf("arm latency (-want +got):\n%s", diff)
	}
	if len(got.Transitions) != 1 || !got.Transitions[0].At.Equal(p.transitions()[0].At) {
		t.Errorf("transitions %+v, want the earliest observation of the one opening", got.Transitions)
	}
	if run.Merged == nil || run.Merged.DuplicateEvents != 2 || run.Merged.DuplicateSamples != 2 {
		t.Errorf("merged record %+v, want 2 duplicate events and samples dropped", run.Merged)
	}
	if len(rec.Events) != 1 || len(rec.Samples) != 1 {
		t.Errorf("merged %d events, %d samples; want 1 and 1", len(rec.Events), len(rec.Samples))
	}
	if run.Verdict != VerdictPassed || !rec.Run.Complete {
		t.Errorf("verdict %q complete %v, want passed and complete", run.Verdict, rec.Run.Complete)
	}
	if _, err := os.Stat(filepath.Join(out, HTMLFile)); err != nil {
		t.Errorf("report.html: %v", err)
	}
}

// TestMergeRefuses checks that shards of different plans are refused with
// the difference named.
func TestMergeRefuses(t *testing.T) {
	p := testPlan()
	dir := t.TempDir()
	three, _ := writeShards(t, filepath.Join(dir, "three"), p, 3)
	two, _ := writeShards(t, filepath.Join(dir, "two"), p, 2)
	seed := p
	seed.seed = 8
	otherSeed, _ := writeShards(t, filepath.Join(dir, "seed"), seed, 3)
	late := p
	late.start = p.start.Add(time.Second)
	otherStart, _ := writeShards(t, filepath.Join(dir, "late"), late, 3)
	plain := filepath.Join(dir, "plain")
	w, err := Create(plain)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(&Run{Experiment: "attack", Arms: []Arm{{Name: "attack"}}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		dirs []string
		want string
	}{
		{name: "different N", dirs: []string{three[0], two[1], three[2]}, want: "split into 3 shards"},
		{name: "different seed", dirs: []string{three[0], three[1], otherSeed[2]}, want: `seed is "7" in the first and "8" in the second`},
		{name: "different start", dirs: []string{three[0], otherStart[1], three[2]}, want: "start time is"},
		{name: "missing index", dirs: three[:2], want: "shard 2/3 missing"},
		{name: "duplicate index", dirs: []string{three[0], three[1], three[1]}, want: "shard 1/3 given twice"},
		{name: "not a shard", dirs: []string{three[0], plain}, want: "is not a shard run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "merged")
			_, _, err := Merge(tt.dirs, MergeOptions{Out: out})
			var me *MergeError
			if !errors.As(err, &me) || me.ExitCode() != 2 {
				t.Fatalf("Merge error %v, want a *MergeError (exit 2)", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Merge error %q does not say %q", err, tt.want)
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a refused merge created %s", out)
			}
		})
	}
}

func TestMergeTruncatedShard(t *testing.T) {
	p := testPlan()
	dir := t.TempDir()
	dirs, all := writeShards(t, dir, p, 2)
	path := filepath.Join(dirs[1], RequestsFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Cut the last line in half, as a killed run leaves it.
	last := strings.LastIndexByte(strings.TrimSuffix(string(data), "\n"), '\n')
	if err := os.WriteFile(path, data[:last+10], 0o644); err != nil {
		t.Fatal(err)
	}
	run, st, err := Merge(dirs, MergeOptions{Out: filepath.Join(dir, "merged")})
	if err != nil {
		t.Fatal(err)
	}
	if st.Requests != len(all)-1 {
		t.Errorf("merged %d requests, want %d (one lost in the cut line)", st.Requests, len(all)-1)
	}
	if run.Arms[0].Totals().Sent != len(all)-1 {
		t.Errorf("arm counts %d sent, want %d", run.Arms[0].Totals().Sent, len(all)-1)
	}
}

// TestMarkerMatchesMarkRequests checks, on random requests sent up to 0.5 s
// late at 100/s (so later requests often leave before earlier ones), that
// MarkRequests on the marker's few requests gives what it gives on all.
func TestMarkerMatchesMarkRequests(t *testing.T) {
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 2))
		var reqs []Request
		rejectFrom := rng.IntN(300)
		for k := range 300 {
			it := start.Add(time.Duration(k) * 10 * time.Millisecond)
			r := Request{Arm: "a", Seq: k + 1, Phase: "p", Intended: it, Sent: it.Add(time.Duration(rng.IntN(500)) * time.Millisecond),
				Latency: time.Duration(rng.IntN(200)) * time.Millisecond, Outcome: OutcomeSucceeded}
			if k >= rejectFrom && rng.IntN(3) == 0 {
				r.Outcome = OutcomeRejected
			}
			reqs = append(reqs, r)
		}
		var ts []Transition
		at := start
		for i := range 1 + rng.IntN(4) {
			at = at.Add(time.Duration(rng.IntN(1500)) * time.Millisecond)
			from, to := "CLOSED", "OPEN"
			if i%2 == 1 {
				from, to = "OPEN", "CLOSED"
			}
			ts = append(ts, Transition{At: at, From: from, To: to})
		}
		want := Arm{Name: "a", Transitions: append([]Transition(nil), ts...)}
		want.MarkRequests(reqs)
		mk := newMarker(ts)
		for _, r := range reqs {
			mk.add(r)
		}
		got := Arm{Name: "a", Transitions: append([]Transition(nil), ts...)}
		got.MarkRequests(mk.requests())
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("seed %d: MarkRequests on the marker's requests differs (-all +marker):\n%s", seed, diff)
		}
	}
}

func TestMergeBadShardLeavesNothing(t *testing.T) {
	p := testPlan()
	dir := t.TempDir()
	dirs, _ := writeShards(t, dir, p, 2)
	path := filepath.Join(dirs[1], RequestsFile)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("attack,notanumber,burst,0,,,1,200,succeeded,\n")
	f.Close()
	out := filepath.Join(dir, "merged")
	_, _, err = Merge(dirs, MergeOptions{Out: out})
	if err == nil || !strings.Contains(err.Error(), "seq") {
		t.Fatalf("Merge error %v, want the bad seq named", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed merge left %s", out)
	}
}
