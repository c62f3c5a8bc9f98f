package demo

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/breaker"
	"github.com/cbprobe/cbprobe/internal/testref"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// fixturePath finds a file of the shared reference fixtures (package testref).
func fixturePath(t *testing.T, name string) string {
	t.Helper()
	return filepath.Join(testref.FixturesDir(t), name)
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(fixturePath(t, name))
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	return b
}

func compactJSON(t *testing.T, b []byte) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		t.Fatalf("compact %q: %v", b, err)
	}
	return buf.String()
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run with -update): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden:\n got: %s\nwant: %s", name, got, want)
	}
}

func TestJavaFloat(t *testing.T) {
	third := float32(1) * float32(100) / float32(3)
	tests := []struct {
		name string
		in   float32
		want string
	}{
		{"below minimum", -1, "-1.0"},
		{"zero", 0, "0.0"},
		{"threshold", 50, "50.0"},
		{"hundred", 100, "100.0"},
		{"a third", third, "33.333332"},
		{"small", 1e-4, "1.0E-4"},
		{"just in plain range", 0.001, "0.001"},
		{"large", 1e7, "1.0E7"},
		{"two thirds", float32(2) * float32(100) / float32(3), "66.666664"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := JavaFloat(tc.in); got != tc.want {
				t.Errorf("JavaFloat(%v) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestJavaDouble(t *testing.T) {
	third := float32(1) * float32(100) / float32(3)
	tests := []struct {
		name string
		in   float64
		want string
	}{
		{"widened float", float64(third), "33.33333206176758"},
		{"count", 6, "6.0"},
		{"seconds", 0.036, "0.036"},
		{"epoch seconds", 1.64088634006e9, "1.64088634006E9"},
		{"cpu usage", 5.625879043600563e-4, "5.625879043600563E-4"},
		{"bytes", 1.7851088e7, "1.7851088E7"},
		{"below minimum", -1, "-1.0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := JavaDouble(tc.in); got != tc.want {
				t.Errorf("JavaDouble(%v) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestJavaZonedDateTime(t *testing.T) {
	berlin := Zone{Loc: time.FixedZone("CET", 3600), ID: "Europe/Berlin"}
	seoulFixed, err := ParseZone("+09:00")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		t    time.Time
		z    Zone
		want string
	}{
		{"nanos, region UTC", time.Date(2024, 10, 15, 13, 22, 48, 477677565, time.UTC), DefaultZone(), "2024-10-15T13:22:48.477677565Z[Etc/UTC]"},
		{"millis, Berlin", time.Date(2017, 1, 10, 14, 39, 17, 117000000, time.UTC), berlin, "2017-01-10T15:39:17.117+01:00[Europe/Berlin]"},
		{"millis ending in zero", time.Date(2017, 1, 10, 14, 39, 22, 780000000, time.UTC), berlin, "2017-01-10T15:39:22.780+01:00[Europe/Berlin]"},
		{"micros", time.Date(2026, 5, 5, 9, 24, 17, 101203000, time.UTC), DefaultZone(), "2026-05-05T09:24:17.101203Z[Etc/UTC]"},
		{"whole minute", time.Date(2017, 1, 10, 15, 39, 0, 0, time.UTC), DefaultZone(), "2017-01-10T15:39Z[Etc/UTC]"},
		{"whole second", time.Date(2017, 1, 10, 15, 39, 5, 0, time.UTC), DefaultZone(), "2017-01-10T15:39:05Z[Etc/UTC]"},
		{"fixed offset, no id", time.Date(2025, 8, 16, 0, 0, 1, 5, time.UTC), seoulFixed, "2025-08-16T09:00:01.000000005+09:00"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := JavaZonedDateTime(tc.t, tc.z); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseZoneErrors(t *testing.T) {
	for _, id := range []string{"+25:99", "Not/AZone"} {
		if _, err := ParseZone(id); err == nil {
			t.Errorf("ParseZone(%q): no error", id)
		}
	}
}

func nbicocchiView(state breaker.State) BreakerView {
	v := BreakerView{Name: "time", State: state, FailureRate: -1, SlowCallRate: -1, FailureRateThreshold: 50, SlowCallRateThreshold: 100}
	if state == breaker.StateOpen {
		v.FailureRate, v.SlowCallRate = 100, 0
		v.BufferedCalls, v.FailedCalls = 5, 5
	}
	return v
}

func TestRenderCircuitBreakersMatchesFixtures(t *testing.T) {
	tests := []struct {
		fixture string
		state   breaker.State
	}{
		{"actuator-circuitbreakers-nbicocchi-sb3-closed.json", breaker.StateClosed},
		{"actuator-circuitbreakers-nbicocchi-sb3-half-open.json", breaker.StateHalfOpen},
		{"actuator-circuitbreakers-nbicocchi-sb3-open.json", breaker.StateOpen},
	}
	for _, tc := range tests {
		t.Run(tc.fixture, func(t *testing.T) {
			want := compactJSON(t, readFixture(t, tc.fixture))
			got := string(RenderCircuitBreakers([]BreakerView{nbicocchiView(tc.state)}))
			if got != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

func TestRenderBreakersHealthMatchesFixture(t *testing.T) {
	var doc struct {
		Components map[string]json.RawMessage `json:"components"`
	}
	if err := json.Unmarshal(readFixture(t, "actuator-health-selimhorri-sb2.json"), &doc); err != nil {
		t.Fatal(err)
	}
	want := compactJSON(t, doc.Components["circuitBreakers"])
	v := HealthView{BreakerView: BreakerView{Name: "proxyService", State: breaker.StateClosed, FailureRate: -1, SlowCallRate: -1, FailureRateThreshold: 50, SlowCallRateThreshold: 100}}
	got, status := RenderBreakersHealth([]HealthView{v}, HealthOptions{BreakersEnabled: true, ShowComponents: true, ShowDetails: true})
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if status != StatusUp {
		t.Errorf("status %s, want UP", status)
	}
}

func TestRenderCBEventsMatchesFixture(t *testing.T) {
	berlin := Zone{Loc: time.FixedZone("CET", 3600), ID: "Europe/Berlin"}
	at := func(s string) time.Time {
		tm, err := time.Parse("2006-01-02T15:04:05.000-07:00", s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	events := []CBEventView{
		{Breaker: "backendA", Type: "ERROR", Time: at("2017-01-10T15:39:17.117+01:00"), ErrorMessage: "org.springframework.web.client.HttpServerErrorException: 500 This is a remote exception", HasDuration: true},
		{Breaker: "backendA", Type: "SUCCESS", Time: at("2017-01-10T15:39:20.518+01:00"), HasDuration: true},
		{Breaker: "backendA", Type: "STATE_TRANSITION", Time: at("2017-01-10T15:39:22.341+01:00"), StateTransition: "CLOSED_TO_OPEN"},
		{Breaker: "backendA", Type: "NOT_PERMITTED", Time: at("2017-01-10T15:39:22.780+01:00")},
	}
	// The 2017 capture omits absent fields; Spring Boot 3.5 and 4.0 write them as null
	// (measured by examples/spring-commerce's schema parity test): compare without the nulls.
	want := compactJSON(t, readFixture(t, "actuator-circuitbreakerevents-resilience4j-demo-2017.json"))
	got := string(RenderCBEvents(events, berlin, false))
	for _, k := range []string{"errorMessage", "durationInMs", "stateTransition"} {
		got = strings.ReplaceAll(got, `,"`+k+`":null`, "")
	}
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestRenderRetryEventsMatchesFixture(t *testing.T) {
	raw := readFixture(t, "actuator-retryevents-nbicocchi-sb3.json")
	var doc struct {
		RetryEvents []struct {
			RetryName, Type, CreationTime, ErrorMessage string
			NumberOfAttempts                            int
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var events []RetryEventView
	for _, e := range doc.RetryEvents {
		tm, err := time.Parse(time.RFC3339Nano, strings.TrimSuffix(e.CreationTime, "[Etc/UTC]"))
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, RetryEventView{Retry: e.RetryName, Type: e.Type, Time: tm, ErrorMessage: e.ErrorMessage, NumberOfAttempts: e.NumberOfAttempts})
	}
	if len(events) != 3 {
		t.Fatalf("fixture has %d events, want 3", len(events))
	}
	if got, want := string(RenderRetryEvents(events, DefaultZone())), compactJSON(t, raw); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// fixtureLines returns the lines of a fixture that mention resilience4j, in order.
func fixtureLines(t *testing.T, name, prefix string) []string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(string(readFixture(t, name)), "\n") {
		if strings.HasPrefix(l, prefix) || strings.HasPrefix(l, "# HELP "+prefix) || strings.HasPrefix(l, "# TYPE "+prefix) {
			out = append(out, l)
		}
	}
	return out
}

func TestRenderPrometheusLegacyMatchesRealScrape(t *testing.T) {
	v := BreakerView{Name: "proxyService", State: breaker.StateClosed, FailureRate: -1, SlowCallRate: -1, FailureRateThreshold: 50, SlowCallRateThreshold: 100}
	got := strings.Split(strings.TrimSuffix(string(RenderPrometheus(nil, PromLegacy, []BreakerView{v}, nil, nil)), "\n"), "\n")
	want := fixtureLines(t, "prometheus-selimhorri-ecommerce-sb2.txt", "resilience4j_")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("legacy rendering differs from the real scrape:\n got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestRenderPrometheusLegacyRetryMatchesRealScrape(t *testing.T) {
	r := RetryView{Name: "snyk-api", SuccessfulWithRetry: 42, SuccessfulWithoutRetry: 9014}
	var got []string
	for _, l := range strings.Split(string(RenderPrometheus(nil, PromLegacy, nil, nil, []RetryView{r})), "\n") {
		if strings.HasPrefix(l, "resilience4j_") {
			got = append(got, l)
		}
	}
	want := fixtureLines(t, "prometheus-dependency-track-retry.txt", "resilience4j_")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// specExampleViews is the state behind resilience4j.md §6.5's Spring Boot 3.3+ example.
func specExampleViews() ([]BreakerView, []TimeLimiterView, []RetryView) {
	cb := BreakerView{Name: "backendA", State: breaker.StateOpen, FailureRate: 50, SlowCallRate: 0,
		FailureRateThreshold: 50, SlowCallRateThreshold: 100, BufferedCalls: 6, FailedCalls: 3, NotPermittedTotal: 1}
	cb.Calls[KindSuccessful] = TimerView{Count: 3, Sum: 0.021, Max: 0.009}
	cb.Calls[KindFailed] = TimerView{Count: 3, Sum: 0.036, Max: 0.013}
	return []BreakerView{cb},
		[]TimeLimiterView{{Name: "backendA", Successful: 5, Timeout: 1}},
		[]RetryView{{Name: "backendA", FailedWithRetry: 1, SuccessfulWithRetry: 2, SuccessfulWithoutRetry: 40}}
}

// TestRenderPrometheusCurrentMatchesSpecExample checks the current generation against
// resilience4j.md §6.5's example, whose three HELP lines (buffered calls, time limiter,
// retry) were replaced by what the real Spring Boot 3.5.7 and 4.0.7 services print
// (docs/spring-parity.md).
func TestRenderPrometheusCurrentMatchesSpecExample(t *testing.T) {
	cbs, tls, rts := specExampleViews()
	out := string(RenderPrometheus(nil, PromCurrent, cbs, tls, rts))
	want, err := os.ReadFile(filepath.Join("testdata", "prometheus-spec-example.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// The example does not fix the family order: compare families as blocks.
	if got, w := familyBlocks(out), familyBlocks(string(want)); strings.Join(got, "\n--\n") != strings.Join(w, "\n--\n") {
		t.Errorf("families differ:\n got:\n%s\nwant:\n%s", strings.Join(got, "\n--\n"), strings.Join(w, "\n--\n"))
	}
	// client_java 1.x sorts families by name.
	var names []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "# TYPE ") {
			names = append(names, strings.TrimSuffix(strings.Fields(l)[2], "_total"))
		}
	}
	if !sort.StringsAreSorted(names) {
		t.Errorf("families not sorted by name: %v", names)
	}
}

// familyBlocks splits exposition text into per-family blocks (HELP line first), sorted.
func familyBlocks(s string) []string {
	var blocks []string
	for _, b := range strings.Split(strings.TrimSpace(s), "# HELP ") {
		if b = strings.TrimSpace(b); b != "" {
			blocks = append(blocks, b)
		}
	}
	sort.Strings(blocks)
	return blocks
}

func TestRenderPrometheusGolden(t *testing.T) {
	cbs, tls, rts := specExampleViews()
	second := BreakerView{Name: "PgPaymentClient#requestPayment(String,PaymentRequest)", State: breaker.StateHalfOpen,
		FailureRate: float32(1) * 100 / 3, SlowCallRate: -1, FailureRateThreshold: 60, SlowCallRateThreshold: 50,
		BufferedCalls: 3, FailedCalls: 1, SlowCalls: 2, SlowFailedCalls: 1, NotPermittedTotal: 17}
	second.Calls[KindSuccessful] = TimerView{Count: 12345678, Sum: 1234.5678, Max: 0.25}
	cbs = append([]BreakerView{second}, cbs...)
	for _, f := range []PromFormat{PromCurrent, PromLegacy} {
		t.Run(f.String(), func(t *testing.T) {
			golden(t, "prometheus-"+f.String()+".txt", RenderPrometheus(nil, f, cbs, tls, rts))
		})
	}
}

func TestHealthAggregation(t *testing.T) {
	// resilience4j.md §5.5 with Spring Boot's default status order.
	mk := func(s breaker.State, fail bool) HealthView {
		return HealthView{BreakerView: BreakerView{Name: s.String(), State: s}, AllowHealthIndicatorToFail: fail}
	}
	tests := []struct {
		name        string
		views       []HealthView
		component   string
		overall     string
		overallHTTP int
	}{
		{"no registered breakers", nil, StatusUnknown, StatusUp, 200},
		{"closed", []HealthView{mk(breaker.StateClosed, false)}, StatusUp, StatusUp, 200},
		{"closed and open", []HealthView{mk(breaker.StateClosed, false), mk(breaker.StateOpen, false)}, StatusUp, StatusUp, 200},
		{"open alone", []HealthView{mk(breaker.StateOpen, false)}, StatusUnknown, StatusUp, 200},
		{"half-open and closed", []HealthView{mk(breaker.StateHalfOpen, false), mk(breaker.StateClosed, false)}, StatusUp, StatusUp, 200},
		{"open allowed to fail", []HealthView{mk(breaker.StateClosed, false), mk(breaker.StateOpen, true)}, StatusDown, StatusDown, 503},
		{"half-open never down", []HealthView{mk(breaker.StateHalfOpen, true)}, StatusUnknown, StatusUp, 200},
		{"forced open unknown", []HealthView{mk(breaker.StateForcedOpen, true)}, StatusUnknown, StatusUp, 200},
		{"disabled and metrics only", []HealthView{mk(breaker.StateDisabled, false), mk(breaker.StateMetricsOnly, false)}, StatusUnknown, StatusUp, 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := HealthOptions{BreakersEnabled: true, ShowComponents: true, ShowDetails: true}
			_, comp := RenderBreakersHealth(tc.views, o)
			if comp != tc.component {
				t.Errorf("component %s, want %s", comp, tc.component)
			}
			body, overall := RenderHealth(tc.views, o)
			if overall != tc.overall || HealthHTTPStatus(overall) != tc.overallHTTP {
				t.Errorf("overall %s (HTTP %d), want %s (HTTP %d)", overall, HealthHTTPStatus(overall), tc.overall, tc.overallHTTP)
			}
			if !json.Valid(body) {
				t.Errorf("invalid JSON %s", body)
			}
		})
	}
}

func TestRenderHealthHidesDetails(t *testing.T) {
	v := HealthView{BreakerView: BreakerView{Name: "a", State: breaker.StateClosed}}
	tests := []struct {
		name string
		o    HealthOptions
		want string
	}{
		{"defaults", HealthOptions{}, `{"status":"UP"}`},
		{"indicator on, details never", HealthOptions{BreakersEnabled: true}, `{"status":"UP"}`},
		{"components only", HealthOptions{BreakersEnabled: true, ShowComponents: true}, `{"status":"UP","components":{"circuitBreakers":{"status":"UP"},"ping":{"status":"UP"}}}`},
		{"indicator off", HealthOptions{ShowComponents: true, ShowDetails: true}, `{"status":"UP","components":{"ping":{"status":"UP"}}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := RenderHealth([]HealthView{v}, tc.o)
			if string(got) != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestAppendJSONStringEscapesLikeJackson(t *testing.T) {
	got := string(appendJSONString(nil, "a\"b\\c\n<&>\x01한"))
	want := `"a\"b\\c\n<&>\u0001한"`
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestGrafanaDashboardMetricsExist: every circuit-breaker and retry series the
// resilience4j Grafana dashboard queries is in the scrape, in both formats,
// except the legacy max_buffered_calls and the bulkhead meters (no bulkhead here).
func TestGrafanaDashboardMetricsExist(t *testing.T) {
	cbs, tls, rts := specExampleViews()
	names := map[string]bool{}
	for _, l := range strings.Split(string(readFixture(t, "grafana-dashboard-exprs.txt")), "\n") {
		if strings.HasPrefix(l, "#") {
			continue
		}
		for _, f := range strings.FieldsFunc(l, func(r rune) bool {
			return !(r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
		}) {
			if strings.HasPrefix(f, "resilience4j_") && !strings.Contains(f, "bulkhead") && f != "resilience4j_circuitbreaker_max_buffered_calls" {
				names[f] = true
			}
		}
	}
	if len(names) < 5 {
		t.Fatalf("found only %v in the dashboard expressions", names)
	}
	for _, pf := range []PromFormat{PromCurrent, PromLegacy} {
		out := "\n" + string(RenderPrometheus(nil, pf, cbs, tls, rts))
		for n := range names {
			if !strings.Contains(out, "\n"+n+"{") {
				t.Errorf("%s scrape has no %s series", pf, n)
			}
		}
	}
}
