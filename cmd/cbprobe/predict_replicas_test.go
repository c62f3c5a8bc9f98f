package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// TestPredictReplicasJSON: --replicas N adds one entry per replica and the
// fleet's view to the JSON; --replicas 1 is the single instance byte for byte.
func TestPredictReplicasJSON(t *testing.T) {
	base := []string{"--phases", "15/s:5s,0/s:15s,5/s:8s", "--runs", "200", "--seed", "3", "--json"}
	single, stderr, code := runPredictCLI(t, base...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	one, stderr, code := runPredictCLI(t, append(base, "--replicas", "1", "--balance", "random")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if one != single {
		t.Fatal("--replicas 1 changed the JSON")
	}
	cases := []struct {
		name    string
		balance string
		n       int
	}{
		{"round robin", "round-robin", 3},
		{"random", "random", 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := runPredictCLI(t, append(base, "--replicas", strconv.Itoa(tc.n), "--balance", tc.balance)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var p struct {
				Requests  int
				Instances []struct {
					Instance         int
					Requests         struct{ Mean float64 }
					FirstOpenRequest struct{ N int }
					FirstOpenLocal   struct{ P50 float64 }
				}
				Fleet *struct {
					Replicas  int
					Balance   string
					OpenCount []float64
					Phases    []struct{ Name string }
				}
			}
			if err := json.Unmarshal([]byte(out), &p); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if len(p.Instances) != tc.n || p.Fleet == nil || p.Fleet.Replicas != tc.n || p.Fleet.Balance != tc.balance {
				t.Fatalf("instances %d, fleet %+v", len(p.Instances), p.Fleet)
			}
			if len(p.Fleet.OpenCount) != tc.n+1 || len(p.Fleet.Phases) != 3 {
				t.Errorf("openCount %v, phases %+v", p.Fleet.OpenCount, p.Fleet.Phases)
			}
			sum := 0.0
			for i, in := range p.Instances {
				sum += in.Requests.Mean
				if in.Instance != i+1 || in.FirstOpenRequest.N == 0 || in.FirstOpenLocal.P50 <= 0 {
					t.Errorf("instance %+v", in)
				}
			}
			if int(sum+0.5) != p.Requests {
				t.Errorf("replicas' requests sum to %v, want %d", sum, p.Requests)
			}
		})
	}
}

// TestPredictReplicasTerminal: the terminal report has the per-replica and
// fleet tables, the median run names the replica of each transition, and no
// ANSI codes.
func TestPredictReplicasTerminal(t *testing.T) {
	out, stderr, code := runPredictCLI(t, "--phases", "15/s:5s,0/s:15s,5/s:8s", "--replicas", "3", "--runs", "100")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"3 replicas behind round-robin", "per replica", "REPLICA", "OPEN REPLICAS", "REFUSED AT ENTRY",
		"first request refused by any replica", "CLOSED_TO_OPEN       replica", "fleet request"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("output holds ANSI codes")
	}
}

// TestPredictReplicasBadInput: bad --replicas and --balance values exit 2
// naming the flag.
func TestPredictReplicasBadInput(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"zero replicas", []string{"--replicas", "0"}, "--replicas"},
		{"negative replicas", []string{"--replicas", "-2"}, "--replicas"},
		{"too many replicas", []string{"--replicas", "101"}, "--replicas"},
		{"balance", []string{"--replicas", "3", "--balance", "least-conn"}, "--balance"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runPredictCLI(t, append(tc.args, "--runs", "1")...)
			if code != 2 {
				t.Fatalf("exit %d, want 2 (stderr %q)", code, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Fatalf("error %q does not name %s", stderr, tc.want)
			}
		})
	}
}
