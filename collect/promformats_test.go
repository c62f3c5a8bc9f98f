package collect

import (
	"context"
	"errors"
	"github.com/cbprobe/cbprobe/breaker"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func testdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func breakerByName(t *testing.T, bs []BreakerSample, name string) BreakerSample {
	t.Helper()
	for _, b := range bs {
		if b.Name == name {
			return b
		}
	}
	t.Fatalf("no breaker %q in %+v", name, bs)
	return BreakerSample{}
}

// TestPromLegacyGenerations: the two resilience4j 0.x generations are read,
// with the failure rate derived by the 0.x rule (-1 until the ring is full).
func TestPromLegacyGenerations(t *testing.T) {
	tests := []struct {
		file     string
		gen      string
		a, b     string // states of backendA and backendB
		bRate    float64
		bBuffer  float64
		bNotPerm float64
	}{
		{"prom-r4j-0.13-exports.txt", LegacyExports, "OPEN", "CLOSED", -1, 3, 0},
		{"prom-r4j-0.14-micrometer.txt", LegacyOrderGauge, "OPEN", "FORCED_OPEN", -1, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			res, err := ParsePrometheusText(testdata(t, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Legacy) != 1 || res.Legacy[0] != tc.gen {
				t.Errorf("legacy %v, want [%s]", res.Legacy, tc.gen)
			}
			a := breakerByName(t, res.Breakers, "backendA")
			if a.State != tc.a || a.Buffered != 10 || a.Failed != 6 || a.NotPermitted != 3 || a.FailureRate != 60 {
				t.Errorf("backendA %+v: want %s, 10 buffered, 6 failed, 3 not permitted, failure rate 60", a, tc.a)
			}
			b := breakerByName(t, res.Breakers, "backendB")
			if b.State != tc.b || b.FailureRate != tc.bRate || b.Buffered != tc.bBuffer || b.NotPermitted != tc.bNotPerm {
				t.Errorf("backendB %+v: want %s, rate %v, %v buffered", b, tc.b, tc.bRate, tc.bBuffer)
			}
			if !math.IsNaN(a.SlowCallRate) || !math.IsNaN(a.FailureRateThreshold) {
				t.Errorf("0.x exports no slow calls and no thresholds: %+v", a)
			}
		})
	}
}

// TestPromEveryResilience4jPageIsReadOrNamed: a page with resilience4j_ lines
// is either read (some breaker, limiter or retry) or its error names every
// resilience4j family on it.
func TestPromEveryResilience4jPageIsReadOrNamed(t *testing.T) {
	pages := map[string][]byte{
		"bulkhead and rate limiter only": []byte(`# TYPE resilience4j_bulkhead_available_concurrent_calls gauge
resilience4j_bulkhead_available_concurrent_calls{name="inventory",} 25.0
# TYPE resilience4j_ratelimiter_available_permissions gauge
resilience4j_ratelimiter_available_permissions{name="api",} 50.0
`),
		"timer max only": []byte("# TYPE resilience4j_circuitbreaker_calls_seconds_max gauge\nresilience4j_circuitbreaker_calls_seconds_max{kind=\"failed\",name=\"pg\"} 0.2\n"),
	}
	for _, f := range []string{"prom-r4j-0.13-exports.txt", "prom-r4j-0.14-micrometer.txt", "prom-openmetrics-sb35.txt"} {
		pages[f] = testdata(t, f)
	}
	for _, f := range []string{"prometheus-selimhorri-ecommerce-sb2.txt", "prometheus-dependency-track-retry.txt", "prometheus-datadog-integrations-extras-legacy.txt"} {
		pages[f] = fixture(t, f)
	}
	for name, body := range pages {
		t.Run(name, func(t *testing.T) {
			res, err := ParsePrometheusText(body)
			if err == nil {
				if len(res.Breakers)+len(res.Limiters)+len(res.Retries) == 0 {
					t.Fatal("no error and nothing read")
				}
				return
			}
			if !errors.Is(err, ErrNoSeries) {
				t.Fatalf("error %v", err)
			}
			for _, line := range strings.Split(string(body), "\n") {
				if strings.HasPrefix(line, "resilience4j_") {
					fam := line[:strings.IndexAny(line, "{ ")]
					if !strings.Contains(err.Error(), fam) {
						t.Errorf("error %q does not name %s", err, fam)
					}
				}
			}
		})
	}
}

// promServer serves body at /actuator/prometheus with content type ctype.
func promServer(t *testing.T, body []byte, ctype string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctype)
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

const textCT = "text/plain; version=0.0.4; charset=utf-8"

// TestPromRetryOnlyNotice: a page with retry counters and no breaker gives a
// notice naming what it has.
func TestPromRetryOnlyNotice(t *testing.T) {
	srv := promServer(t, fixture(t, "prometheus-dependency-track-retry.txt"), textCT)
	src := NewPrometheus(srv.URL+"/actuator/prometheus", HTTPOptions{})
	s := pollOK(t, src)
	if len(s.Breakers) != 0 || len(s.Retries) == 0 {
		t.Fatalf("breakers %v retries %v", s.Breakers, s.Retries)
	}
	if len(s.Notices) != 1 || !strings.Contains(s.Notices[0], "no circuit breaker series") || !strings.Contains(s.Notices[0], "retry ") {
		t.Fatalf("notices %q: want one naming the retries and the missing breakers", s.Notices)
	}
	if s2 := pollOK(t, src); len(s2.Notices) != 0 {
		t.Errorf("notice repeated: %q", s2.Notices)
	}
}

// nanPage is the pattern of resilience4j issue #1330: every gauge of a
// breaker reads NaN once its object was garbage-collected.
const nanPage = `# HELP resilience4j_circuitbreaker_state The states of the circuit breaker
# TYPE resilience4j_circuitbreaker_state gauge
resilience4j_circuitbreaker_state{name="upstream",state="metrics_only",} NaN
resilience4j_circuitbreaker_state{name="upstream",state="half_open",} NaN
resilience4j_circuitbreaker_state{name="upstream",state="open",} NaN
resilience4j_circuitbreaker_state{name="upstream",state="closed",} NaN
resilience4j_circuitbreaker_state{name="upstream",state="disabled",} NaN
resilience4j_circuitbreaker_state{name="upstream",state="forced_open",} NaN
# HELP resilience4j_circuitbreaker_failure_rate The failure rate of the circuit breaker
# TYPE resilience4j_circuitbreaker_failure_rate gauge
resilience4j_circuitbreaker_failure_rate{name="upstream",} NaN
# HELP resilience4j_circuitbreaker_not_permitted_calls_total Total number of not permitted calls
# TYPE resilience4j_circuitbreaker_not_permitted_calls_total counter
resilience4j_circuitbreaker_not_permitted_calls_total{kind="not_permitted",name="upstream",} 12.0
`

// TestPromNaNGaugesExplained: NaN state gauges leave the state unknown and
// are explained once, naming #1330, not shown as a blank.
func TestPromNaNGaugesExplained(t *testing.T) {
	res, err := ParsePrometheusText([]byte(nanPage))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.NaN) != 1 || res.NaN[0].Breaker.Name != "upstream" ||
		strings.Join(res.NaN[0].Families, ",") != "resilience4j_circuitbreaker_failure_rate,resilience4j_circuitbreaker_state" {
		t.Fatalf("NaN gauges %+v", res.NaN)
	}
	if b := res.Breakers[0]; b.State != "" || b.NotPermittedTotal != 12 {
		t.Errorf("breaker %+v: state unknown, counter still read", b)
	}
	srv := promServer(t, []byte(nanPage), textCT)
	s := pollOK(t, NewPrometheus(srv.URL, HTTPOptions{}))
	if len(s.Notices) != 1 || !strings.Contains(s.Notices[0], "#1330") || !strings.Contains(s.Notices[0], "upstream") {
		t.Fatalf("notices %q", s.Notices)
	}
}

// TestPromSummaryWithoutCount: a summary with quantiles but no _count line
// leaves the call count unknown, not 0.
func TestPromSummaryWithoutCount(t *testing.T) {
	page := `# TYPE resilience4j_circuitbreaker_calls_seconds summary
resilience4j_circuitbreaker_calls_seconds{kind="failed",name="pg",quantile="0.5",} 0.012
resilience4j_circuitbreaker_calls_seconds{kind="failed",name="pg",quantile="0.99",} 0.2
resilience4j_circuitbreaker_calls_seconds_count{kind="successful",name="pg",} 9.0
resilience4j_circuitbreaker_calls_seconds_sum{kind="successful",name="pg",} 0.5
# TYPE resilience4j_circuitbreaker_state gauge
resilience4j_circuitbreaker_state{name="pg",state="closed",} 1.0
`
	res, err := ParsePrometheusText([]byte(page))
	if err != nil {
		t.Fatal(err)
	}
	b := res.Breakers[0]
	if !math.IsNaN(b.CallsFailed) || b.CallsSuccessful != 9 {
		t.Fatalf("failed calls %v (want unknown), successful %v (want 9)", b.CallsFailed, b.CallsSuccessful)
	}
}

// prometheusAccept is the Accept header Prometheus 2.x scrapes with.
const prometheusAccept = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"

// TestPromOpenMetrics: the page micrometer-registry-prometheus 1.x serves to
// Prometheus' Accept header (exemplar, sample timestamp, _created, # UNIT,
// counters typed without _total, # EOF), with a Feign name holding '#',
// parentheses and a comma, and breakers in FORCED_OPEN, DISABLED and
// METRICS_ONLY. A CLOSED start makes the tracker see each transition.
func TestPromOpenMetrics(t *testing.T) {
	om := testdata(t, "prom-openmetrics-sb35.txt")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Accept"), "application/openmetrics-text") {
			http.Error(w, "this test server speaks OpenMetrics only", http.StatusNotAcceptable)
			return
		}
		w.Header().Set("Content-Type", "application/openmetrics-text;version=1.0.0;charset=utf-8")
		w.Write(om)
	}))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req.Header.Set("Accept", prometheusAccept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	res, err := ParsePrometheusText(body)
	if err != nil {
		t.Fatal(err)
	}
	const pg = "PgPaymentClient#requestPayment(String,PaymentRequest)"
	if !res.OpenMetrics || res.ProcessStart != 1.733039990123e9 {
		t.Errorf("openmetrics %v, process start %v", res.OpenMetrics, res.ProcessStart)
	}
	want := map[string]string{pg: "OPEN", "inventory": "FORCED_OPEN", "audit": "DISABLED", "shadow": "METRICS_ONLY"}
	if len(res.Breakers) != len(want) {
		t.Fatalf("breakers %+v", res.Breakers)
	}
	for name, st := range want {
		if b := breakerByName(t, res.Breakers, name); b.State != st {
			t.Errorf("%s: state %q, want %s", name, b.State, st)
		}
	}
	p := breakerByName(t, res.Breakers, pg)
	if p.NotPermittedTotal != 7 || p.CallsFailed != 13 || p.CallsSuccessful != 7 || p.Failed != 13 || p.Buffered != 20 || p.FailureRate != 65 {
		t.Errorf("%s: %+v", pg, p)
	}
	if inv := breakerByName(t, res.Breakers, "inventory"); inv.NotPermittedTotal != 0 {
		t.Errorf("inventory not permitted %v", inv.NotPermittedTotal)
	}
	if len(res.Retries) != 1 || res.Retries[0].SuccessfulWithoutRetry != 40 || res.Retries[0].FailedWithRetry != 1 {
		t.Errorf("retries %+v", res.Retries)
	}

	// The same page through the Prometheus source and the tracker, after a
	// page where every breaker was CLOSED.
	closed := strings.NewReplacer(`state="closed"} 0.0`, `state="closed"} 1.0`, `state="open"} 1.0`, `state="open"} 0.0`,
		`state="forced_open"} 1.0`, `state="forced_open"} 0.0`, `state="disabled"} 1.0`, `state="disabled"} 0.0`,
		`state="metrics_only"} 1.0`, `state="metrics_only"} 0.0`).Replace(string(om))
	page := []byte(closed)
	srv2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/openmetrics-text;version=1.0.0;charset=utf-8")
		w.Write(page)
	}))
	defer srv2.Close()
	src := NewPrometheus(srv2.URL, HTTPOptions{})
	tk := NewTracker(StaticThresholds(map[string]Threshold{"": {FailureRate: 60, SlowCallRate: 50, Source: "test"}}))
	s1 := pollOK(t, src)
	for _, b := range s1.Breakers {
		if b.State != "CLOSED" {
			t.Fatalf("first page: %s is %s", b.Name, b.State)
		}
	}
	tk.Observe(s1)
	page = om
	got, _ := tk.Observe(pollOK(t, src))
	causes := map[string]breaker.OpenCause{}
	for _, tr := range got {
		causes[tr.Breaker.Name+" "+tr.From+">"+tr.To] = tr.Cause
	}
	wantCauses := map[string]breaker.OpenCause{pg + " CLOSED>OPEN": breaker.CauseFailureRate, "inventory CLOSED>FORCED_OPEN": breaker.CauseForced,
		"audit CLOSED>DISABLED": "", "shadow CLOSED>METRICS_ONLY": ""}
	if len(causes) != len(wantCauses) {
		t.Fatalf("transitions %v, want %v", causes, wantCauses)
	}
	for k, c := range wantCauses {
		if got, ok := causes[k]; !ok || got != c {
			t.Errorf("%s: cause %q (seen %v), want %q", k, got, ok, c)
		}
	}
	if _, err := src.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
}
