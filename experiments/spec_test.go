package experiments

import (
	"errors"
	"strings"
	"testing"
)

func TestNamedSpecsParse(t *testing.T) {
	want := map[string]int{"retry": 2, "slow-call": 2, "window-type": 2}
	names := Names()
	if len(names) != len(want) {
		t.Fatalf("Names() = %v, want the %d named experiments", names, len(want))
	}
	for _, n := range names {
		s, err := Named(n)
		if err != nil {
			t.Fatalf("Named(%q): %v", n, err)
		}
		if s.Name != n || len(s.Arms) != want[n] {
			t.Errorf("Named(%q): name %q, %d arms; want %d arms", n, s.Name, len(s.Arms), want[n])
		}
	}
}

func TestParseSpecErrors(t *testing.T) {
	tests := []struct {
		name, yaml, wantIn string
	}{
		{"unknown key", "name: x\ntrafic: {}\n", `line 2: unknown key "trafic"`},
		{"no name", "traffic: {phases: '1/s:1s'}\narms: [{name: a}]\n", "name: missing"},
		{"no traffic", "name: x\narms: [{name: a}]\n", "set phases or sequential"},
		{"both traffic kinds", "name: x\ntraffic: {phases: '1/s:1s', sequential: {users: 1, requests: 1}}\narms: [{name: a}]\n", "not both"},
		{"no arms", "name: x\ntraffic: {phases: '1/s:1s'}\n", "at least one arm"},
		{"duplicate arm", "name: x\ntraffic: {phases: '1/s:1s'}\narms: [{name: a}, {name: a}]\n", `"a" is used twice`},
		{"bad arm name", "name: x\ntraffic: {phases: '1/s:1s'}\narms: [{name: 'a.b'}]\n", "may not contain"},
		{"bad expectation", "name: x\ntraffic: {phases: '1/s:1s'}\narms: [{name: a}]\nexpect: ['opens>>1']\n", "expect:"},
		{"wrong type", "name: x\ntraffic: {sequential: {users: many, requests: 1}}\narms: [{name: a}]\n", "cannot unmarshal"},
		{"bad think", "name: x\ntraffic: {sequential: {users: 1, requests: 1, think: soon}}\narms: [{name: a}]\n", "think"},
		{"unknown gateway kind", "name: x\ntraffic: {phases: '1/s:1s'}\ngateway: {kind: toxiproxy}\narms: [{name: a}]\n", `gateway.kind: "toxiproxy" is not pgsim or fault`},
		{"stub without fault", "name: x\ntraffic: {phases: '1/s:1s'}\ngateway: {stub: r.yaml}\narms: [{name: a}]\n", "upstream, stub and rules need kind: fault"},
		{"stub and upstream", "name: x\ntraffic: {phases: '1/s:1s'}\ngateway: {kind: fault, stub: r.yaml, upstream: 'http://127.0.0.1:9'}\narms: [{name: a}]\n", "not both"},
		{"rules without fault", "name: x\ntraffic: {phases: '1/s:1s'}\ngateway: {rules: r.yaml}\narms: [{name: a}]\n", "need kind: fault"},
		{"bad upstream", "name: x\ntraffic: {phases: '1/s:1s'}\ngateway: {kind: fault, upstream: 'ftp://x'}\narms: [{name: a}]\n", "gateway.upstream:"},
		{"kind in an arm", "name: x\ntraffic: {phases: '1/s:1s'}\narms: [{name: a, gateway: {kind: fault}}]\n", "arms[0].gateway: kind, upstream, stub and rules belong in the top-level gateway"},
		{"stub in a phase", "name: x\ntraffic: {phases: '1/s:1s,1/s:1s'}\ngateway-phases: {2: {stub: r.yaml}}\narms: [{name: a}]\n", "gateway-phases: phase 2: kind, upstream, stub and rules"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSpec("spec.yaml", []byte(tc.yaml))
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("ParseSpec error = %v, want *SpecError", err)
			}
			if !strings.Contains(err.Error(), tc.wantIn) || !strings.HasPrefix(err.Error(), "spec.yaml") {
				t.Errorf("error %q should start with the file name and contain %q", err, tc.wantIn)
			}
		})
	}
}

func TestGatewayMerge(t *testing.T) {
	rate, slow := 0.1, true
	base := Gateway{ErrorRate: &rate, Latency: "100ms-500ms"}
	got := base.Merge(Gateway{Slow: &slow, Latency: "1ms"})
	if *got.ErrorRate != 0.1 || got.Latency != "1ms" || got.Slow == nil || !*got.Slow {
		t.Errorf("Merge = %+v, want error rate kept, latency and slow replaced", got)
	}
}

func FuzzParseSpec(f *testing.F) {
	for _, n := range Names() {
		data, _ := NamedSource(n)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSpec("fuzz.yaml", data)
		if err == nil && (s.Name == "" || len(s.Arms) == 0) {
			t.Fatalf("accepted an incomplete spec: %+v", s)
		}
	})
}
