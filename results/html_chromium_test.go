package results

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// chromiumTimeout bounds one headless Chromium run. Chromium starts in 1-4 s
// on an idle 2-core machine; the bound is far above that so a loaded machine
// passes; no test measures how long the page takes.
const chromiumTimeout = 3 * time.Minute

// chromiumWidth is the window width of every Chromium run in these tests:
// the DOM run that reads the panels' boxes and the screenshot run must lay
// the page out alike.
const chromiumWidth = 1000

// chromium returns the headless Chromium binary. It fails the test when
// Chromium is missing: `make test` installs it (scripts/test-deps.sh).
func chromium(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("CBPROBE_CHROMIUM")
	if bin == "" {
		bin = "/usr/bin/chromium"
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("headless Chromium is needed for this test (%v); run scripts/test-deps.sh or set CBPROBE_CHROMIUM", err)
	}
	return bin
}

// runChromium runs headless Chromium on url with extra flags and returns stdout.
func runChromium(t *testing.T, bin, url string, height int, extra ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), chromiumTimeout)
	defer cancel()
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--hide-scrollbars",
		"--force-device-scale-factor=1", fmt.Sprintf("--window-size=%d,%d", chromiumWidth, height),
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, bin, append(append(args, extra...), url)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", extra, err, stderr.String())
	}
	return stdout.String()
}

func dumpDOM(t *testing.T, bin, url string) string {
	t.Helper()
	return runChromium(t, bin, url, 1200, "--dump-dom")
}

func head(s string) string {
	if len(s) > 3000 {
		return s[:3000] + "..."
	}
	return s
}

// writePage writes page into a temporary directory and returns its file URL.
func writePage(t *testing.T, name, page string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	return "file://" + path
}

// panel is one chart panel as the page left it after its script ran.
type panel struct {
	id, state string
	series    []string
	box       image.Rectangle
}

// panels reads every <figure class="panel"> of a dumped DOM, in page order.
func panels(t *testing.T, dom string) []panel {
	t.Helper()
	attr := regexp.MustCompile(`([a-z-]+)="([^"]*)"`)
	var out []panel
	for _, tag := range regexp.MustCompile(`<figure class="panel"[^>]*>`).FindAllString(dom, -1) {
		a := map[string]string{}
		for _, m := range attr.FindAllStringSubmatch(tag, -1) {
			a[m[1]] = m[2]
		}
		p := panel{id: a["data-panel"], state: a["data-state"], series: strings.Fields(a["data-series"])}
		var x, y, w, h int
		if _, err := fmt.Sscanf(a["data-box"], "%d,%d,%d,%d", &x, &y, &w, &h); err != nil {
			t.Fatalf("panel %s has no box (%q): %v", p.id, a["data-box"], err)
		}
		p.box = image.Rect(x, y, x+w, y+h)
		out = append(out, p)
	}
	return out
}

// checkScripts fails the test when the page's script reported an error.
func checkScripts(t *testing.T, dom string) {
	t.Helper()
	if strings.Contains(dom, `data-script-error="1"`) {
		t.Errorf("the page reported a script error:\n%s", head(dom))
	}
	if e := regexp.MustCompile(`(?s)<pre id="script-errors">(.*?)</pre>`).FindStringSubmatch(dom); e == nil || e[1] != "" {
		t.Errorf("script errors: %q", e)
	}
}

// panelIDs are the panels of one arm, top to bottom.
var panelIDs = []string{"state", "rates", "outcomes", "failures", "calls", "window", "retry", "limiter", "latency"}

// TestHTMLRendersInChromium opens report.html of a failed run in headless
// Chromium and reads the DOM after the scripts ran: the failed verdict at the
// top, every panel drawn or saying what was not recorded, no script error.
func TestHTMLRendersInChromium(t *testing.T) {
	bin := chromium(t)
	rec := richRecord()
	rec.Run = *hostileRun()
	rec.Run.Complete = true
	rec.Run.Arms[1].Name = "TIME_BASED"
	run := rec.Run
	run.Arms = append([]Arm{}, run.Arms...)
	run.Arms[1].Name = hostileRun().Arms[1].Name
	for i := range rec.Requests {
		if rec.Requests[i].Arm == "TIME_BASED" {
			rec.Requests[i].Arm = run.Arms[1].Name
		}
	}
	rec.Run = run
	dir := t.TempDir()
	rec.Dir = dir
	if err := WriteHTMLFile(rec); err != nil {
		t.Fatal(err)
	}
	dom := dumpDOM(t, bin, "file://"+filepath.Join(dir, HTMLFile))
	checkScripts(t, dom)
	if strings.Contains(dom, "<title>pwned") {
		t.Error("an arm name ran as script")
	}

	// The verdict: failed, at the top, in the failed colour, nothing green.
	v := regexp.MustCompile(`<div class="verdict ([a-z-]+)" data-verdict="([a-z]+)"`).FindAllStringSubmatch(dom, -1)
	if len(v) != 1 || v[0][1] != "v-failed" || v[0][2] != "failed" {
		t.Errorf("verdict banners %v, want one v-failed failed", v)
	}
	if !regexp.MustCompile(`<span class="word">failed</span><span class="detail">1 of 2 expectations failed`).MatchString(dom) {
		t.Error("the banner does not say failed with the count of failed expectations")
	}

	m := regexp.MustCompile(`data-charts-rendered="(\d+)"`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("no data-charts-rendered attribute: the drawing script did not finish\n%s", head(dom))
	}
	if n, _ := strconv.Atoi(m[1]); n != len(panelIDs)*len(run.Arms) {
		t.Errorf("panels rendered %d, want %d (%d per arm)", n, len(panelIDs)*len(run.Arms), len(panelIDs))
	}
	ps := panels(t, dom)
	// The second arm has requests only: no samples, no service events.
	want := map[string]string{}
	for _, id := range panelIDs {
		want["0/"+id] = "drawn"
		want["1/"+id] = "missing"
	}
	want["1/failures"] = "empty"
	want["1/outcomes"], want["1/latency"] = "drawn", "drawn"
	if len(ps) != 2*len(panelIDs) {
		t.Fatalf("%d panels, want %d", len(ps), 2*len(panelIDs))
	}
	for i, p := range ps {
		key := fmt.Sprintf("%d/%s", i/len(panelIDs), panelIDs[i%len(panelIDs)])
		if p.id != panelIDs[i%len(panelIDs)] || p.state != want[key] {
			t.Errorf("panel %d: %s %s, want %s", i, p.id, p.state, key+" "+want[key])
		}
	}
	if n := strings.Count(dom, `class="missing-note">Not recorded: `); n != 6 {
		t.Errorf("%d panels say what was not recorded, want 6 (state, rates, breaker calls, window, Retry, TimeLimiter of the second arm)", n)
	}
	if !strings.Contains(dom, `class="cause">slow-call-rate</text>`) {
		t.Error("the OPEN's cause is not written on the state chart")
	}
	// Phases on every time axis of the first arm, the pause hatched.
	if n := strings.Count(dom, `class="phase-label"`); n < 3*len(panelIDs) {
		t.Errorf("%d phase labels, want at least 3 on each of the first arm's %d charts", n, len(panelIDs))
	}
	if n := strings.Count(dom, `class="phase pause"`); n != len(panelIDs) {
		t.Errorf("%d pauses marked, want one on each of the first arm's %d charts", n, len(panelIDs))
	}
	for _, pc := range []string{"p50", "p90", "p95", "p99"} {
		if !strings.Contains(dom, `class="lat-`+pc+`"`) {
			t.Errorf("no %s latency line", pc)
		}
	}
}

// TestHTMLZoomInChromium opens the report at #view=1-3: every arm's time
// axis shows 1 s to 3 s from the arm's start, drawn by the same code the
// zoom buttons, drag and wheel call.
func TestHTMLZoomInChromium(t *testing.T) {
	bin := chromium(t)
	url := writePage(t, "report.html", renderPage(t, richRecord()))
	dom := dumpDOM(t, bin, url+"#view=1-3")
	checkScripts(t, dom)
	if !strings.Contains(dom, `data-view="1-3"`) {
		t.Errorf("view %q, want 1-3", regexp.MustCompile(`data-view="[^"]*"`).FindString(dom))
	}
	if n := strings.Count(dom, "showing 1s to 3s"); n != 2 {
		t.Errorf("%d arms say they show 1s to 3s, want 2", n)
	}
	first := dom[strings.Index(dom, `id="arm-0"`):strings.Index(dom, `id="arm-1"`)]
	// phase1 (0-5 s) is in view, phase3 (20-28 s) is not.
	label := func(name string) bool {
		return regexp.MustCompile(`class="phase-label"[^>]*>` + name + `<`).MatchString(first)
	}
	if !label("phase1") || label("phase3") {
		t.Error("zoomed to 1-3 s, the first arm should name phase1 and not phase3")
	}
	full := dumpDOM(t, bin, url)
	if !strings.Contains(full, `data-view="0-28`) {
		t.Errorf("unzoomed view %q, want 0-28...", regexp.MustCompile(`data-view="[^"]*"`).FindString(full))
	}
}

// TestHTMLScreenshotInChromium takes a screenshot of the report of a failed
// run and checks the pixels: the verdict banner is red with nothing green,
// and in every drawn panel each series with data in view shows its colour
// (so no latency percentile hides another). The panels' boxes come from a
// DOM dump at the same window width.
func TestHTMLScreenshotInChromium(t *testing.T) {
	bin := chromium(t)
	url := writePage(t, "report.html", renderPage(t, richRecord()))
	dom := dumpDOM(t, bin, url)
	checkScripts(t, dom)
	m := regexp.MustCompile(`data-page-height="(\d+)"`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatal("the page did not report its height")
	}
	height, _ := strconv.Atoi(m[1])
	shot := filepath.Join(t.TempDir(), "shot.png")
	runChromium(t, bin, url, height, "--screenshot="+shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decode screenshot: %v", err)
	}

	vb := regexp.MustCompile(`<div class="verdict v-failed"[^>]*data-box="(\d+),(\d+),(\d+),(\d+)"`).FindStringSubmatch(dom)
	if vb == nil {
		t.Fatal("no failed verdict banner with a box")
	}
	n := func(i int) int { v, _ := strconv.Atoi(vb[i]); return v }
	banner := image.Rect(n(1), n(2), n(1)+n(3), n(2)+n(4))
	if c := countColor(img, banner, "#c62828"); c < 50 {
		t.Errorf("the failed banner has %d red pixels, want its red border and icon", c)
	}
	if c := countColor(img, banner, "#2e7d32"); c > 0 {
		t.Errorf("the failed banner has %d green pixels", c)
	}

	drawn := 0
	for _, p := range panels(t, dom) {
		if p.state != "drawn" {
			continue
		}
		drawn++
		if !p.box.In(img.Bounds()) {
			t.Errorf("panel %s at %v lies outside the screenshot %v", p.id, p.box, img.Bounds())
			continue
		}
		if len(p.series) == 0 {
			t.Errorf("panel %s is drawn with no series", p.id)
		}
		for _, col := range p.series {
			// Three pixels: a one-request bar or a thin line still has them.
			if c := countColor(img, p.box, col); c < 3 {
				t.Errorf("panel %s: series colour %s shows in %d pixels of %v", p.id, col, c, p.box)
			}
		}
	}
	if drawn < len(panelIDs) {
		t.Errorf("%d panels drawn, want at least the first arm's %d", drawn, len(panelIDs))
	}
}

// countColor counts the pixels of img in r within a small distance of hex
// ("#rrggbb"): anti-aliasing blends edges, the middle of a line or bar keeps
// its colour.
func countColor(img image.Image, r image.Rectangle, hex string) int {
	v, err := strconv.ParseUint(strings.TrimPrefix(hex, "#"), 16, 32)
	if err != nil {
		return 0
	}
	wr, wg, wb := int(v>>16&0xff), int(v>>8&0xff), int(v&0xff)
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			d := absInt(int(cr>>8)-wr) + absInt(int(cg>>8)-wg) + absInt(int(cb>>8)-wb)
			if d <= 24 {
				n++
			}
		}
	}
	return n
}

func absInt(i int) int {
	if i < 0 {
		return -i
	}
	return i
}

// TestHTMLComparisonInChromium renders `report A B --html`'s page: both
// verdicts, every panel of both columns, no script error.
func TestHTMLComparisonInChromium(t *testing.T) {
	bin := chromium(t)
	b := richRecord()
	b.Run = *withVerdict(VerdictPassed)
	url := writePage(t, "compare.html", renderComparison(t, richRecord(), b))
	dom := dumpDOM(t, bin, url)
	checkScripts(t, dom)
	for _, want := range []string{`data-verdict="failed"`, `data-verdict="passed"`} {
		if !strings.Contains(dom, want) {
			t.Errorf("comparison lacks %s", want)
		}
	}
	ps := panels(t, dom)
	if len(ps) != 4*len(panelIDs) {
		t.Fatalf("%d panels, want %d (two arms in each of two runs)", len(ps), 4*len(panelIDs))
	}
	// Both columns of a pair share the time view: same axis span.
	if !strings.Contains(dom, "showing 0s to 28") {
		t.Error("the first pair does not show both arms' whole span")
	}
}

// zoomDriver is a script the zoom-controls test appends to a report: it
// works the first arm's controls the way a reader does (buttons, a
// double-click, Ctrl+wheel, a drag) with synthetic DOM events and records
// the view after each step in data-steps on <body>.
const zoomDriver = `<script>
(function () {
  var steps = [];
  function view() { steps.push(document.body.getAttribute('data-view')); }
  function chart() { return document.querySelector('#arm-0 svg.chart'); }
  function at(f) {
    var r = chart().getBoundingClientRect(), k = r.width / 900;
    return {x: r.left + (56 + (900 - 56 - 14) * f) * k, y: r.top + r.height / 2};
  }
  function press(label) {
    document.querySelectorAll('.zoom[data-group="0"] button').forEach(function (b) { if (b.textContent === label) { b.click(); } });
  }
  view();
  press('zoom in'); view();
  press('later'); view();
  press('reset'); view();
  var p = at(0.25);
  chart().dispatchEvent(new MouseEvent('dblclick', {bubbles: true, clientX: p.x, clientY: p.y})); view();
  p = at(0.5);
  chart().dispatchEvent(new WheelEvent('wheel', {bubbles: true, cancelable: true, ctrlKey: true, deltaY: 100, clientX: p.x, clientY: p.y})); view();
  var box = document.querySelector('.charts[data-group="0"]');
  chart().dispatchEvent(new PointerEvent('pointerdown', {bubbles: true, button: 0, pointerId: 1, clientX: p.x, clientY: p.y}));
  chart().dispatchEvent(new PointerEvent('pointermove', {bubbles: true, pointerId: 1, clientX: p.x - 100, clientY: p.y}));
  box.dispatchEvent(new PointerEvent('pointerup', {bubbles: true, pointerId: 1, clientX: p.x - 100, clientY: p.y})); view();
  press('zoom out'); press('zoom out'); press('zoom out'); view();
  document.body.setAttribute('data-steps', steps.join(';'));
})();
</script>
`

// TestHTMLZoomControlsInChromium works the zoom controls with synthetic
// events and checks each view against the arithmetic of the controls: zoom
// in halves the span around its middle, "later" moves by half the span,
// reset shows the whole arm, a double-click halves the span around the
// pointer, Ctrl+wheel down widens it by a quarter, a drag to the left moves
// the view later keeping its width, zooming out stops at the whole arm.
func TestHTMLZoomControlsInChromium(t *testing.T) {
	bin := chromium(t)
	page := strings.Replace(renderPage(t, richRecord()), "</body>", zoomDriver+"</body>", 1)
	dom := dumpDOM(t, bin, writePage(t, "report.html", page))
	checkScripts(t, dom)
	m := regexp.MustCompile(`data-steps="([^"]*)"`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the driver did not finish:\n%s", head(dom))
	}
	var v [][2]float64
	for _, s := range strings.Split(m[1], ";") {
		var a, b float64
		if _, err := fmt.Sscanf(s, "%g-%g", &a, &b); err != nil {
			t.Fatalf("step %q: %v (steps %s)", s, err, m[1])
		}
		v = append(v, [2]float64{a, b})
	}
	if len(v) != 8 {
		t.Fatalf("%d steps, want 8: %s", len(v), m[1])
	}
	S := v[0][1]
	// The page prints views to 0.1 s; every expected bound is a few such roundings away.
	const tol = 0.16
	near := func(step int, a, b float64) {
		t.Helper()
		if abs(v[step][0]-a) > tol || abs(v[step][1]-b) > tol {
			t.Errorf("step %d: view %v-%v, want %.2f-%.2f (steps %s)", step, v[step][0], v[step][1], a, b, m[1])
		}
	}
	if v[0][0] != 0 || S < 28 {
		t.Fatalf("initial view %v, want 0 to the arm's end (28 s or more)", v[0])
	}
	near(1, S/4, 3*S/4)
	near(2, S/2, S)
	near(3, 0, S)
	near(4, S/8, 5*S/8)
	near(5, S/16, 11*S/16)
	if w5, w6 := v[5][1]-v[5][0], v[6][1]-v[6][0]; v[6][0] <= v[5][0]+tol || abs(w6-w5) > 2*tol {
		t.Errorf("drag to the left: view %v after %v, want it later with the same width", v[6], v[5])
	}
	near(7, 0, S)
}
