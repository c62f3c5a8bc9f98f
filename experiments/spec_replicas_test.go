package experiments

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cbprobe/cbprobe/sim"
)

const fleetSpec = `name: fleet
traffic:
  phases: "burst=15/s:5s,pause=0/s:15s,resume=5/s:8s"
replicas: %s
balance: %s
arms:
  - name: count-based
`

func fleetYAML(replicas, balance string) []byte {
	return []byte(fmt.Sprintf(fleetSpec, replicas, balance))
}

// TestSpecReplicasReachThePlan: replicas and balance reach every arm's
// simulation twin and nothing else; a spec without them plans one instance.
func TestSpecReplicasReachThePlan(t *testing.T) {
	cases := []struct {
		name, replicas, balance string
		want                    int
		wantBalance             sim.Balance
	}{
		{"three random", "3", "random", 3, sim.BalanceRandom},
		{"four round robin", "4", "round-robin", 4, sim.BalanceRoundRobin},
		{"default balance", "2", `""`, 2, sim.BalanceRoundRobin},
		{"one instance", "1", "random", 1, sim.BalanceRandom},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseSpec("fleet.yaml", fleetYAML(tc.replicas, tc.balance))
			if err != nil {
				t.Fatal(err)
			}
			plans, err := planArms(s, "", "")
			if err != nil {
				t.Fatal(err)
			}
			a := plans[0].sim
			if a.Replicas != tc.want || a.Balance != tc.wantBalance {
				t.Fatalf("sim arm replicas %d balance %v, want %d %v", a.Replicas, a.Balance, tc.want, tc.wantBalance)
			}
			p, err := sim.Predict(context.Background(), a, 20, 1)
			if err != nil {
				t.Fatal(err)
			}
			if (p.Fleet != nil) != (tc.want > 1) || (tc.want > 1 && len(p.Instances) != tc.want) {
				t.Fatalf("prediction fleet %v, %d instances", p.Fleet != nil, len(p.Instances))
			}
		})
	}
	s, err := Named("window-type")
	if err != nil {
		t.Fatal(err)
	}
	plans, err := planArms(s, "", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range plans {
		if p.sim.Replicas != 0 || p.sim.Fleet() {
			t.Errorf("arm %s: a spec without replicas planned %d", p.arm.Name, p.sim.Replicas)
		}
	}
}

// TestSpecReplicasErrors: bad replicas and balance values are *SpecErrors naming the key.
func TestSpecReplicasErrors(t *testing.T) {
	cases := []struct {
		name, replicas, balance, want string
	}{
		{"negative", "-1", "random", "replicas: -1"},
		{"too many", "101", "random", "replicas: 101"},
		{"not a number", "many", "random", "cannot unmarshal"},
		{"unknown policy", "3", "least-conn", "balance:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSpec("fleet.yaml", fleetYAML(tc.replicas, tc.balance))
			var se *SpecError
			if !errors.As(err, &se) || se.ExitCode() != 2 {
				t.Fatalf("ParseSpec error %v, want *SpecError", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q lacks %q", err, tc.want)
			}
		})
	}
}

// TestSpecCheckFleetTarget: a fleet spec is refused against the embedded
// service (no target) and accepted with a target; one instance is always fine.
func TestSpecCheckFleetTarget(t *testing.T) {
	cases := []struct {
		name, replicas, target string
		refused                bool
	}{
		{"fleet embedded", "3", "", true},
		{"fleet behind a load balancer", "3", "http://127.0.0.1:8080", false},
		{"one instance embedded", "1", "", false},
		{"unset embedded", "0", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseSpec("fleet.yaml", fleetYAML(tc.replicas, "round-robin"))
			if err != nil {
				t.Fatal(err)
			}
			err = s.CheckFleetTarget(tc.target)
			if !tc.refused {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var se *SpecError
			if !errors.As(err, &se) || se.ExitCode() != 2 || !strings.Contains(err.Error(), "--target") || !strings.Contains(err.Error(), "replicas: 3") {
				t.Fatalf("error %v, want a *SpecError naming replicas and --target", err)
			}
		})
	}
}
