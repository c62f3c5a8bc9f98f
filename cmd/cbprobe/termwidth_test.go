package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cbprobe/cbprobe/collect"
)

func TestTerminalWidth(t *testing.T) {
	tests := []struct {
		columns string
		want    int
	}{{"160", 160}, {" 120 ", 120}, {"", defaultWidth}, {"0", defaultWidth}, {"-5", defaultWidth}, {"wide", defaultWidth}}
	for _, tc := range tests {
		t.Run("COLUMNS="+tc.columns, func(t *testing.T) {
			t.Setenv("COLUMNS", tc.columns)
			if got := terminalWidth(); got != tc.want {
				t.Errorf("terminalWidth() = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestFitLine(t *testing.T) {
	const feign = "PgPaymentClient#requestPayment(String,PaymentRequest)"
	rest := " CLOSED      failure 12.5%/60.0%  slow 40.0%/50.0%  calls 20"
	tests := []struct {
		name, bkr string
		width     int
		want      string   // the whole line, when given
		parts     []string // prefix, infix and suffix the line must have, when given
	}{
		{name: "fits: padded as before", bkr: "pg", width: 160, want: "pg" + strings.Repeat(" ", 28) + rest},
		{name: "no limit", bkr: feign, width: 0, want: feign + rest},
		{name: "fits unpadded", bkr: feign, width: utf8.RuneCountInString(feign + rest), want: feign + rest},
		{name: "name shortened in the middle, rest whole", bkr: feign, width: 100, parts: []string{"PgPaymentClient#req", "…", "PaymentRequest)" + rest}},
		{name: "narrow: name at its minimum, end cut", bkr: feign, width: 50, parts: []string{"PgPayme…Request) CLOSED", "failure", "…"}},
		{name: "status line cut", bkr: "", width: 10, want: strings.TrimRight(rest[:9], " ") + "…"},
		{name: "one column", bkr: feign, width: 1, want: "P"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pad := 30
			if tc.bkr == "" {
				pad = 0
			}
			got := fitLine(tc.bkr, pad, rest, tc.width)
			if tc.width > 0 && utf8.RuneCountInString(got) > tc.width {
				t.Errorf("%d columns, wider than %d: %q", utf8.RuneCountInString(got), tc.width, got)
			}
			if tc.want != "" && got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
			if p := tc.parts; p != nil && (!strings.HasPrefix(got, p[0]) || !strings.Contains(got, p[1]) || !strings.HasSuffix(got, p[2])) {
				t.Errorf("got %q, want it to start with %q, hold %q and end with %q", got, p[0], p[1], p[2])
			}
			// Spaces before a cut are dropped: at most two columns stay unused.
			if p := tc.parts; p != nil && utf8.RuneCountInString(got) < tc.width-2 {
				t.Errorf("got %d columns, want about all %d used", utf8.RuneCountInString(got), tc.width)
			}
		})
	}
}

// TestWatchRedrawFitsWidth is issue 15's tmux case: a Feign breaker's line in
// a 160-column terminal (and a narrow one) must not wrap, or the in-place
// redraw scrolls a copy per poll.
func TestWatchRedrawFitsWidth(t *testing.T) {
	for _, width := range []int{160, 80, 40} {
		var buf bytes.Buffer
		v := &watchView{w: &buf, tty: true, width: width, latest: map[collect.BreakerKey]collect.BreakerSample{}, last: map[collect.BreakerKey]collect.Transition{}}
		b := collect.BreakerSample{Name: "PgPaymentClient#requestPayment(String,PaymentRequest)", Instance: "10.0.0.12:8080", State: "HALF_OPEN",
			FailureRate: 12.5, SlowCallRate: 100, FailureRateThreshold: 60, SlowCallRateThreshold: 50, Buffered: 20}
		v.last[b.Key()] = collect.Transition{Breaker: b.Key(), From: "OPEN", To: "HALF_OPEN", Time: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), Cause: "slow-call-rate"}
		v.latest[b.Key()] = b
		v.status = "polling fails: GET http://10.0.0.12:8080/actuator/circuitbreakers: dial tcp: connection refused by the service for the third time"
		v.redraw()
		lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
		if len(lines) != 2 || v.drawn != 2 {
			t.Fatalf("width %d: %d lines, %d drawn, want 2:\n%s", width, len(lines), v.drawn, buf.String())
		}
		for _, l := range lines {
			if n := utf8.RuneCountInString(l); n > width {
				t.Errorf("width %d: line of %d columns: %q", width, n, l)
			}
		}
		if !strings.HasPrefix(lines[0], "PgPayme") || !strings.Contains(lines[0], "…") {
			t.Errorf("width %d: breaker name not kept at its start and shortened: %q", width, lines[0])
		}
	}
}

func TestEraseLinesAbove(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{{0, ""}, {-1, ""}, {1, "\x1b[1A\x1b[J"}, {12, "\x1b[12A\x1b[J"}} {
		if got := eraseLinesAbove(tc.n); got != tc.want {
			t.Errorf("eraseLinesAbove(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
