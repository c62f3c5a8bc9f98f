package main

import (
	"context"
	"strings"
	"testing"
)

// TestMetricsFlagsShared checks that attack, experiment and watch spell and
// refuse the metrics flags alike (one definition, metricsflags.go): each bad
// combination is a usage error (exit 2) naming the flag, in every command.
func TestMetricsFlagsShared(t *testing.T) {
	commands := map[string][]string{
		"attack":     {"attack", "--target", "http://127.0.0.1:1", "--users", "1", "--requests", "1"},
		"experiment": {"experiment", "retry", "--target", "http://127.0.0.1:1", "--arm", "retry-3", "--pg-listen", "127.0.0.1:0"},
		"watch":      {"watch", "--duration", "1s"},
	}
	cases := []struct {
		name  string
		flags []string
		want  string
	}{
		{"not a URL", []string{"--actuator", "localhost:8080"}, "--actuator"},
		{"two sources", []string{"--actuator", "http://127.0.0.1:1", "--prometheus", "http://127.0.0.1:1/actuator/prometheus"}, "--prometheus"},
		{"selector without prom-api", []string{"--actuator", "http://127.0.0.1:1", "--selector", `job="x"`}, "--selector"},
		{"bad header", []string{"--actuator", "http://127.0.0.1:1", "--header", "no colon"}, "--header"},
		{"negative interval", []string{"--actuator", "http://127.0.0.1:1", "--interval", "-1s"}, "--interval"},
	}
	for cmd, base := range commands {
		for _, tc := range cases {
			t.Run(cmd+"/"+tc.name, func(t *testing.T) {
				args := append(append([]string{}, base...), tc.flags...)
				_, stderr, code := runCLI(context.Background(), append(args, "--color", "never")...)
				if code != 2 || !strings.Contains(stderr, tc.want) {
					t.Errorf("cbprobe %s: exit %d, stderr %q; want 2 naming %s", strings.Join(args, " "), code, stderr, tc.want)
				}
			})
		}
	}
}
