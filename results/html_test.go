package results

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// hostileRun is the sample run with an arm name that tries to end the data script.
func hostileRun() *Run {
	run := sampleRun()
	run.Arms[1].Name = `</script><script>document.title="pwned"</script>`
	run.Findings[0].Title = `<img src=x onerror=alert(1)>`
	return run
}

func renderHTML(t *testing.T, run *Run) string {
	t.Helper()
	rec := &Record{Run: *run, Requests: sampleRequests(), Samples: sampleSamples(), Events: sampleEvents()}
	var b bytes.Buffer
	if err := WriteHTML(&b, rec); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestHTMLSelfContained(t *testing.T) {
	page := renderHTML(t, hostileRun())
	// No external resource of any kind.
	for _, bad := range []string{"<link", "@import", "url(", "<iframe", "<img"} {
		if strings.Contains(page, bad) {
			t.Errorf("report.html contains %q: it must load nothing", bad)
		}
	}
	if m := regexp.MustCompile(`<[a-z]+[^>]*\s(src|href)=`).FindString(page); m != "" {
		t.Errorf("report.html has an element that loads something: %q", m)
	}
	// Exactly the three scripts of the template: the hostile name did not close one.
	if n := strings.Count(page, "</script>"); n != 3 {
		t.Errorf("%d </script> tags, want 3 (onerror hook, data, drawing code)", n)
	}
	m := regexp.MustCompile(`(?s)<script type="application/json" id="cbprobe-data">(.*?)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no cbprobe-data script")
	}
	var data reportData
	if err := json.Unmarshal([]byte(m[1]), &data); err != nil {
		t.Fatalf("embedded data is not JSON: %v", err)
	}
	if len(data.Arms) != 2 || data.Arms[1].Name != hostileRun().Arms[1].Name {
		t.Fatalf("arms %d, second %q: the embedded data lost the arm name", len(data.Arms), data.Arms[1].Name)
	}
	a := data.Arms[0]
	// 30 requests at 200 ms intervals from +0.2 s: seconds 0..6, 10 of each outcome.
	ok, rej, fail := 0, 0, 0
	for _, s := range a.Seconds {
		ok, rej, fail = ok+s.Succeeded, rej+s.Rejected, fail+s.Failed
	}
	if ok != 10 || rej != 10 || fail != 10 {
		t.Errorf("per-second outcomes sum to %d/%d/%d, want 10/10/10", ok, rej, fail)
	}
	if len(a.Rates) != 10 || len(a.Opens) != 1 || a.Opens[0].Cause != "slow-call-rate" {
		t.Errorf("rates %d opens %+v, want 10 samples and one slow-call-rate OPEN", len(a.Rates), a.Opens)
	}
	if len(a.States) < 2 || a.States[0].State != "CLOSED" || a.States[1].State != "OPEN" {
		t.Errorf("state bands %+v, want CLOSED then OPEN", a.States)
	}
}

// TestHTMLRendersInChromium opens report.html in headless Chromium and reads
// the DOM after the scripts ran: every chart drawn, no script error. It fails
// when Chromium is missing: `make test` installs it (scripts/test-deps.sh).
func TestHTMLRendersInChromium(t *testing.T) {
	bin := os.Getenv("CBPROBE_CHROMIUM")
	if bin == "" {
		bin = "/usr/bin/chromium"
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("headless Chromium is needed for this test (%v); run scripts/test-deps.sh or set CBPROBE_CHROMIUM", err)
	}
	run := hostileRun()
	dir := writeRunWithSamples(t, run)
	dom := dumpDOM(t, bin, filepath.Join(dir, HTMLFile))

	m := regexp.MustCompile(`data-charts-rendered="(\d+)"`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("no data-charts-rendered attribute: the drawing script did not finish\n%s", head(dom))
	}
	if n, _ := strconv.Atoi(m[1]); n != 4*len(run.Arms) {
		t.Errorf("charts rendered %d, want %d (4 per arm)", n, 4*len(run.Arms))
	}
	if strings.Contains(dom, `data-script-error="1"`) {
		t.Errorf("the page reported a script error:\n%s", head(dom))
	}
	if e := regexp.MustCompile(`(?s)<pre id="script-errors">(.*?)</pre>`).FindStringSubmatch(dom); e == nil || e[1] != "" {
		t.Errorf("script errors: %q", e)
	}
	if strings.Contains(dom, "<title>pwned") {
		t.Error("an arm name ran as script")
	}
	if got := strings.Count(dom, `class="band"`); got < 2 {
		t.Errorf("%d state bands drawn, want at least CLOSED and OPEN", got)
	}
	if got := strings.Count(dom, `class="open-mark"`); got != 4 {
		t.Errorf("%d OPEN marks, want 4 (one OPEN on each of the first arm's charts)", got)
	}
	if !strings.Contains(dom, ">slow-call-rate</text>") {
		t.Error("the OPEN's cause is not written on the state chart")
	}
}

func dumpDOM(t *testing.T, bin, page string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--dump-dom", "file://"+page)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium --dump-dom: %v\n%s", err, stderr.String())
	}
	return stdout.String()
}

func head(s string) string {
	if len(s) > 3000 {
		return s[:3000] + "..."
	}
	return s
}
