package results

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode"
)

// hostileRun is the sample run with an arm name that tries to end the data script.
func hostileRun() *Run {
	run := sampleRun()
	run.Arms[1].Name = `</script><script>document.title="pwned"</script>`
	run.Findings[0].Title = `<img src=x onerror=alert(1)>`
	return run
}

func renderPage(t *testing.T, rec *Record) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteHTML(&b, rec); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func renderComparison(t *testing.T, a, b *Record) string {
	t.Helper()
	var out bytes.Buffer
	if err := WriteHTMLComparison(&out, a, b, "run-a", "run-b"); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// embeddedData reads the chart data back from a page.
func embeddedData(t *testing.T, page string) reportData {
	t.Helper()
	m := regexp.MustCompile(`(?s)<script type="application/json" id="cbprobe-data">(.*?)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no cbprobe-data script")
	}
	var data reportData
	if err := json.Unmarshal([]byte(m[1]), &data); err != nil {
		t.Fatalf("embedded data is not JSON: %v", err)
	}
	return data
}

func TestHTMLGolden(t *testing.T) {
	golden(t, "report.golden.html", []byte(renderPage(t, richRecord())))
}

func TestHTMLSelfContained(t *testing.T) {
	hostile := richRecord()
	hostile.Run = *hostileRun()
	hostile.Run.Complete = true
	for name, page := range map[string]string{
		"report":     renderPage(t, hostile),
		"comparison": renderComparison(t, hostile, richRecord()),
	} {
		t.Run(name, func(t *testing.T) {
			// No external resource of any kind.
			for _, bad := range []string{"<link", "@import", "url(", "<iframe", "<img"} {
				if strings.Contains(page, bad) {
					t.Errorf("page contains %q: it must load nothing", bad)
				}
			}
			if m := regexp.MustCompile(`<[a-z]+[^>]*\s(src|href)=`).FindString(page); m != "" {
				t.Errorf("page has an element that loads something: %q", m)
			}
			// Exactly the three scripts of the template: the hostile name did not close one.
			if n := strings.Count(page, "</script>"); n != 3 {
				t.Errorf("%d </script> tags, want 3 (onerror hook, data, drawing code)", n)
			}
			// No emoji: without an emoji font they render as empty boxes.
			for i, r := range page {
				if r >= 0x1F000 || (r >= 0x2600 && r <= 0x27BF) || r == 0xFE0F || r == 0x2754 {
					t.Fatalf("emoji or pictograph %U at byte %d: %q", r, i, page[max(0, i-40):min(len(page), i+40)])
				}
				if r > 0x7f && !unicode.IsPrint(r) {
					t.Fatalf("unprintable %U at byte %d", r, i)
				}
			}
			data := embeddedData(t, page)
			found := false
			for _, a := range data.Arms {
				found = found || a.Name == hostileRun().Arms[1].Name
			}
			if !found {
				t.Error("the embedded data lost the hostile arm name")
			}
		})
	}
}

// TestHTMLVerdictBanner: the verdict at the top has the verdict's word and
// colour; a failed run shows nothing green and never "complete" as a verdict.
func TestHTMLVerdictBanner(t *testing.T) {
	for _, tc := range []struct {
		verdict, class, detail string
	}{
		{VerdictFailed, "v-failed", "1 of 2 expectations failed"},
		{VerdictPassed, "v-passed", "all 2 expectations held"},
		{VerdictInconclusive, "v-inconclusive", "1 of 2 expectations could not be decided"},
		{VerdictIncomplete, "v-incomplete", "the run did not finish"},
	} {
		t.Run(tc.verdict, func(t *testing.T) {
			rec := richRecord()
			rec.Run = *withVerdict(tc.verdict)
			page := renderPage(t, rec)
			banner := regexp.MustCompile(`<div class="verdict ([a-z-]+)" data-verdict="([a-z]+)"[^>]*>.*?<span class="word">([a-z]+)</span><span class="detail">([^<]*)</span>`).FindStringSubmatch(page)
			if banner == nil {
				t.Fatalf("no verdict banner in\n%s", head(page))
			}
			if banner[1] != tc.class || banner[2] != tc.verdict || banner[3] != tc.verdict {
				t.Errorf("banner class %q verdict %q word %q, want %q %q %q", banner[1], banner[2], banner[3], tc.class, tc.verdict, tc.verdict)
			}
			if !strings.Contains(banner[4], tc.detail) {
				t.Errorf("banner detail %q lacks %q", banner[4], tc.detail)
			}
			if i, j := strings.Index(page, `class="verdict`), strings.Index(page, "<h3>Expectations"); i < 0 || j < i {
				t.Error("the verdict is not above the expectations")
			}
			if tc.verdict != VerdictPassed && strings.Contains(page, `class="verdict v-passed"`) {
				t.Error("a run that did not pass has a passed (green) banner")
			}
		})
	}
}

// tables returns each <table>'s cells, row by row (header row first).
func tables(page string) [][][]string {
	var out [][][]string
	cell := regexp.MustCompile(`(?s)<t[hd][^>]*>(.*?)</t[hd]>`)
	tags := regexp.MustCompile(`<[^>]+>`)
	for _, tb := range regexp.MustCompile(`(?s)<table[^>]*>(.*?)</table>`).FindAllStringSubmatch(page, -1) {
		var rows [][]string
		for _, tr := range regexp.MustCompile(`(?s)<tr[^>]*>(.*?)</tr>`).FindAllStringSubmatch(tb[1], -1) {
			var row []string
			for _, c := range cell.FindAllStringSubmatch(tr[1], -1) {
				row = append(row, strings.TrimSpace(tags.ReplaceAllString(c[1], "")))
			}
			rows = append(rows, row)
		}
		out = append(out, rows)
	}
	return out
}

func TestHTMLNoEmptyColumns(t *testing.T) {
	uncertain := richRecord()
	uncertain.Run.Arms[0].Transitions[1].Uncertainty = "no sample in HALF_OPEN"
	for _, tc := range []struct {
		name            string
		page            string
		wantUncertainty bool
	}{
		{"no uncertainty", renderPage(t, richRecord()), false},
		{"one uncertain transition", renderPage(t, uncertain), true},
		{"comparison", renderComparison(t, richRecord(), uncertain), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := false
			for _, tb := range tables(tc.page) {
				if len(tb) < 2 {
					t.Errorf("table with a header and no rows: %v", tb)
					continue
				}
				for j, h := range tb[0] {
					if h == "uncertainty" {
						got = true
					}
					used := j == 0
					for _, r := range tb[1:] {
						used = used || (j < len(r) && r[j] != "")
					}
					if !used {
						t.Errorf("column %q is empty on every row of %v", h, tb[0])
					}
				}
			}
			if got != tc.wantUncertainty {
				t.Errorf("uncertainty column shown %v, want %v", got, tc.wantUncertainty)
			}
		})
	}
}

func TestHTMLSeries(t *testing.T) {
	rec := richRecord()
	cb, tb := htmlSeriesOf(rec, 0), htmlSeriesOf(rec, 1)

	t.Run("phases", func(t *testing.T) {
		want := []htmlPhase{{"phase1", 0, 5, 15, false}, {"phase2", 5, 20, 0, true}, {"phase3", 20, 28, 5, false}}
		if len(cb.Phases) != len(want) {
			t.Fatalf("phases %+v, want %+v", cb.Phases, want)
		}
		for i, p := range cb.Phases {
			w := want[i]
			// Times are float seconds from the same time.Time: equal to a microsecond.
			if p.Name != w.Name || p.Pause != w.Pause || p.Rate != w.Rate || abs(p.From-w.From) > 1e-6 || abs(p.To-w.To) > 1e-6 {
				t.Errorf("phase %d %+v, want %+v", i, p, w)
			}
		}
		if cb.Start != 0 || cb.End < 28 {
			t.Errorf("span %v..%v, want 0..28 or more", cb.Start, cb.End)
		}
		if abs(tb.Start-30) > 1e-6 || tb.Phases[0].From != tb.Start {
			t.Errorf("second arm starts at %v, phase at %v: want 30", tb.Start, tb.Phases[0].From)
		}
	})
	t.Run("speed", func(t *testing.T) {
		fast := richRecord()
		fast.Run.Parameters["speed"] = 4.0
		for i := range fast.Requests {
			q := &fast.Requests[i]
			d := q.Intended.Sub(t0()) / 4
			q.Intended, q.Sent = t0().Add(d), t0().Add(d)
		}
		s := htmlSeriesOf(fast, 0)
		if p := s.Phases[1]; abs(p.From-1.25) > 1e-6 || abs(p.To-5) > 1e-6 {
			t.Errorf("pause at --speed 4 spans %v..%v, want 1.25..5", p.From, p.To)
		}
	})
	t.Run("failures by kind", func(t *testing.T) {
		got := map[string]int{}
		for _, s := range cb.Failures.Seconds {
			for i, n := range s.V {
				got[cb.Failures.Keys[i]] += n
			}
		}
		// 30 requests before the OPEN at +2 s: i%5 == 1 is HTTP 500, i%5 == 3 a timeout.
		if got["pay: HTTP 500"] != 6 || got["no answer: timeout"] != 6 || len(got) != 2 {
			t.Errorf("failures by kind %v, want 6 pay: HTTP 500 and 6 no answer: timeout", got)
		}
	})
	t.Run("calls and events", func(t *testing.T) {
		sum := func(st htmlStack) map[string]int {
			m := map[string]int{}
			for _, s := range st.Seconds {
				for i, n := range s.V {
					m[st.Keys[i]] += n
				}
			}
			return m
		}
		calls := sum(cb.Calls)
		if calls["gateway call succeeded"] != 18 || calls["gateway call failed: InternalServerError"] != 6 ||
			calls["gateway call failed: TimeoutException"] != 6 || calls["refused (not permitted)"] != 85 {
			t.Errorf("breaker calls %v", calls)
		}
		if !strings.Contains(cb.Calls.Note, "dropped events") {
			t.Errorf("calls note %q does not say events may be lost", cb.Calls.Note)
		}
		if r := sum(cb.Retry); r["retry scheduled"] != 12 || r["not retried (ignored error)"] != 85 {
			t.Errorf("retry events %v", r)
		}
		if l := sum(cb.Limiter); l["timed out"] != 6 || l["finished in time"] != 18 {
			t.Errorf("time limiter events %v", l)
		}
		for name, st := range map[string]htmlStack{"calls": tb.Calls, "retry": tb.Retry, "limiter": tb.Limiter} {
			if st.Recorded || st.Missing == "" {
				t.Errorf("%s of an arm without events: recorded %v, missing %q; want a reason", name, st.Recorded, st.Missing)
			}
		}
		// A run from before per-kind events: nothing counted, and the panels say why.
		old := richRecord()
		for i := range old.Events {
			if e := &old.Events[i]; e.Kind == "circuitbreaker" || e.Kind == "retry" || e.Kind == "timelimiter" {
				e.Kind = "breaker"
			}
		}
		legacy := htmlSeriesOf(old, 0)
		for name, st := range map[string]htmlStack{"calls": legacy.Calls, "retry": legacy.Retry, "limiter": legacy.Limiter} {
			if st.Recorded || !strings.Contains(st.Missing, "before cbprobe told") {
				t.Errorf("%s of a run with kind \"breaker\" events: recorded %v, missing %q", name, st.Recorded, st.Missing)
			}
		}
		if !cb.Window.Recorded || tb.Window.Recorded || tb.Window.Missing == "" {
			t.Errorf("window recorded %v / %v (%q), want true / false with a reason", cb.Window.Recorded, tb.Window.Recorded, tb.Window.Missing)
		}
	})
	t.Run("latency", func(t *testing.T) {
		for _, l := range append(cb.Latency, tb.Latency...) {
			if l.P50 > l.P90 || l.P90 > l.P95 || l.P95 > l.P99 {
				t.Errorf("bin %d: percentiles out of order %+v", l.T, l)
			}
		}
		// 25 requests of 1..25 ms in one bin: nearest rank p50 13, p90 23, p95 24, p99 25.
		var reqs []*Request
		for i := 25; i >= 1; i-- {
			reqs = append(reqs, &Request{Intended: t0(), Sent: t0(), Latency: time.Duration(i) * time.Millisecond})
		}
		got := latencyPerBin(reqs, func(time.Time) int { return 7 })
		want := htmlLatency{T: 7, N: 25, P50: 13, P90: 23, P95: 24, P99: 25}
		if len(got) != 1 || got[0] != want {
			t.Errorf("latency per bin %+v, want %+v", got, want)
		}
	})
}

func TestBinWidth(t *testing.T) {
	for _, tc := range []struct{ span, want float64 }{
		{3600, 1}, {30, 1}, {28, 0.5}, {10, 0.2}, {5, 0.1}, {1.7, 0.05}, {0.5, 0.01}, {0.1, 0.01},
	} {
		if got := binWidth(tc.span); got != tc.want {
			t.Errorf("binWidth(%v) = %v, want %v", tc.span, got, tc.want)
		}
	}
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

func TestErrorKinds(t *testing.T) {
	for _, tc := range []struct{ msg, want string }{
		{"feign.FeignException$InternalServerError: [500 Internal Server Error] during [POST]", "InternalServerError"},
		{"java.util.concurrent.TimeoutException: TimeLimiter 'pg' recorded a timeout exception.", "TimeoutException"},
		{"java.util.concurrent.TimeoutException", "TimeoutException"},
		{"", "error"},
		{"something went wrong", "error"},
	} {
		if got := errorKind(tc.msg); got != tc.want {
			t.Errorf("errorKind(%q) = %q, want %q", tc.msg, got, tc.want)
		}
	}
	for _, tc := range []struct {
		q    Request
		want string
	}{
		{Request{Status: 500, Error: "pay: 500 Internal Server Error"}, "pay: HTTP 500"},
		{Request{Status: 502, Error: "502 Bad Gateway"}, "HTTP 502"},
		{Request{Error: "order: dial tcp 127.0.0.1:1: connect: connection refused"}, "no answer: connection refused"},
		{Request{Error: "pay: context deadline exceeded"}, "no answer: timeout"},
		{Request{Error: "pay: unexpected EOF"}, "no answer: connection closed"},
		{Request{Error: "weird"}, "no answer: other error"},
	} {
		if got := failureKind(tc.q); got != tc.want {
			t.Errorf("failureKind(%+v) = %q, want %q", tc.q, got, tc.want)
		}
	}
}

func TestHTMLComparison(t *testing.T) {
	b := richRecord()
	b.Run = *withVerdict(VerdictPassed)
	b.Run.Arms = b.Run.Arms[:1]
	page := renderComparison(t, richRecord(), b)
	for _, want := range []string{`data-verdict="failed"`, `data-verdict="passed"`, "run-a", "run-b", "Side by side",
		"This run has no arm at this position.", `data-group="1" data-column="1"`} {
		if !strings.Contains(page, want) {
			t.Errorf("comparison lacks %q", want)
		}
	}
	data := embeddedData(t, page)
	if data.Columns != 2 || len(data.Arms) != 3 {
		t.Fatalf("columns %d arms %d, want 2 and 3 (two arms against one)", data.Columns, len(data.Arms))
	}
	// The differing verdicts are marked.
	if !regexp.MustCompile(`<td>verdict</td><td class="[^"]*diff">failed</td><td class="[^"]*diff">passed</td>`).MatchString(page) {
		t.Error("the verdict row does not mark the difference")
	}
}
