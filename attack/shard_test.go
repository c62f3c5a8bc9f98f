package attack

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestParseShard(t *testing.T) {
	tests := []struct {
		name, in string
		want     Shard
		wantErr  bool
	}{
		{name: "first of three", in: "0/3", want: Shard{Index: 0, Count: 3}},
		{name: "last of three", in: " 2 / 3 ", want: Shard{Index: 2, Count: 3}},
		{name: "one shard", in: "0/1", want: Shard{Index: 0, Count: 1}},
		{name: "index equals count", in: "3/3", wantErr: true},
		{name: "negative index", in: "-1/3", wantErr: true},
		{name: "zero count", in: "0/0", wantErr: true},
		{name: "no slash", in: "2", wantErr: true},
		{name: "not a number", in: "a/3", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseShard(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseShard(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if err == nil && got != tt.want {
				t.Errorf("ParseShard(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

// TestShardSplitIsThePlan checks, for several phases and shard counts, that
// the shards' schedules together hold every slot of the single-process
// schedule exactly once, each with the same due time, and that each shard
// holds Planned/N of them (rounded up or down).
func TestShardSplitIsThePlan(t *testing.T) {
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	phases := []Phase{
		{Name: "burst", Rate: 15, Duration: 5 * time.Second},
		{Name: "odd", Rate: 7, Duration: 1300 * time.Millisecond},
		{Name: "fast", Rate: 1000, Duration: 2 * time.Second},
		{Name: "slow", Rate: 0.5, Duration: 3 * time.Second},
	}
	for _, ph := range phases {
		for _, n := range []int{1, 2, 3, 7} {
			t.Run(fmt.Sprintf("%s/%d shards", ph.Name, n), func(t *testing.T) {
				whole := &schedule{start: start, rate: ph.Rate}
				var want []time.Time
				for i := range ph.Planned() {
					want = append(want, whole.due(i))
				}
				var got []time.Time
				total := 0
				for i := range n {
					sh := Shard{Index: i, Count: n}
					sc := &schedule{start: start, rate: ph.Rate, shard: sh}
					p := sh.Planned(ph)
					total += p
					if lo, hi := ph.Planned()/n, (ph.Planned()+n-1)/n; p < lo || p > hi {
						t.Errorf("shard %s plans %d, want %d..%d", sh, p, lo, hi)
					}
					for j := range p {
						got = append(got, sc.due(j))
					}
				}
				if total != ph.Planned() {
					t.Fatalf("shards plan %d in total, the phase %d", total, ph.Planned())
				}
				slices.SortFunc(got, func(a, b time.Time) int { return a.Compare(b) })
				if !slices.EqualFunc(got, want, time.Time.Equal) {
					t.Errorf("union of the shards' due times differs from the plan's")
				}
			})
		}
	}
}

// TestShardedRunsSendThePlan runs three shards of one plan concurrently in
// this process against one server, from one StartAt, and checks that they
// sent every planned request once (by intended time) and numbered their own
// requests 1..n. Counts are exact at any load: a send the loaded machine
// could not make in time is counted as dropped, and sent + dropped = planned
// holds per shard.
func TestShardedRunsSendThePlan(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer srv.Close()
	phases := []Phase{{Name: "a", Rate: 40, Duration: 500 * time.Millisecond}, {Name: "pause", Duration: 100 * time.Millisecond}, {Name: "b", Rate: 20, Duration: 500 * time.Millisecond}}
	flow := &Flow{Name: "get", Steps: []Step{{Name: "get", Method: http.MethodGet, URL: "/"}}}
	startAt := time.Now().Add(200 * time.Millisecond)
	const n = 3
	var (
		mu       sync.Mutex
		intended []time.Time
		sums     [n]Summary
		wg       sync.WaitGroup
	)
	for i := range n {
		wg.Go(func() {
			var seqs []int
			sum, err := Run(context.Background(), Config{Target: srv.URL, Flow: flow, Phases: phases, StartAt: startAt,
				Shard: Shard{Index: i, Count: n}, DropAfter: time.Second}, func(r Result) {
				mu.Lock()
				intended = append(intended, r.Intended)
				mu.Unlock()
				seqs = append(seqs, r.Seq)
			})
			if err != nil {
				t.Errorf("shard %d: %v", i, err)
			}
			slices.Sort(seqs)
			for k, s := range seqs {
				if s != k+1 {
					t.Errorf("shard %d: Seqs %v are not 1..%d", i, seqs, len(seqs))
					break
				}
			}
			sums[i] = sum
		})
	}
	wg.Wait()
	dropped := 0
	for i, sum := range sums {
		if !sum.Started.Equal(startAt) {
			t.Errorf("shard %d started %v, want StartAt %v", i, sum.Started, startAt)
		}
		for k, ps := range sum.Phases {
			if want := (Shard{Index: i, Count: n}).Planned(phases[k]); ps.Planned != want || ps.Sent+ps.Dropped != want {
				t.Errorf("shard %d phase %s: planned %d, sent %d + dropped %d, want %d", i, ps.Name, ps.Planned, ps.Sent, ps.Dropped, want)
			}
			dropped += ps.Dropped
		}
	}
	whole := 0
	for _, ph := range phases {
		whole += ph.Planned()
	}
	if len(intended)+dropped != whole {
		t.Fatalf("shards sent %d + dropped %d, the plan has %d", len(intended), dropped, whole)
	}
	// Every intended time is the plan's: phase start + k/rate, no two equal.
	seen := map[time.Time]bool{}
	for _, it := range intended {
		if seen[it] {
			t.Fatalf("two shards sent for the same intended time %v", it)
		}
		seen[it] = true
	}
}

func TestShardSequentialUsers(t *testing.T) {
	tests := []struct {
		name         string
		shard        Shard
		users        int
		wantUsers    []int
		wantRequests int
	}{
		{name: "no split", shard: Shard{}, users: 3, wantUsers: []int{1, 2, 3}},
		{name: "shard 0 of 2, 3 users", shard: Shard{Index: 0, Count: 2}, users: 3, wantUsers: []int{1, 3}},
		{name: "shard 1 of 2, 3 users", shard: Shard{Index: 1, Count: 2}, users: 3, wantUsers: []int{2}},
		{name: "shard 2 of 3, 2 users", shard: Shard{Index: 2, Count: 3}, users: 2, wantUsers: nil},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer srv.Close()
	flow := &Flow{Name: "get", Steps: []Step{{Name: "get", Method: http.MethodGet, URL: "/"}}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			users := map[int]int{}
			sum, err := Run(context.Background(), Config{Target: srv.URL, Flow: flow, Users: tt.users, Requests: 2, Shard: tt.shard},
				func(r Result) { users[r.User]++ })
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for u, c := range users {
				got = append(got, u)
				if c != 2 {
					t.Errorf("user %d sent %d requests, want 2", u, c)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.wantUsers) {
				t.Errorf("users %v, want %v", got, tt.wantUsers)
			}
			if p := sum.Phases[0].Planned; p != 2*len(tt.wantUsers) {
				t.Errorf("planned %d, want %d", p, 2*len(tt.wantUsers))
			}
		})
	}
}
