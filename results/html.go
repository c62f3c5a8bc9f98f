package results

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"
)

// htmlData is what the report templates render; Data is the JSON the inline
// script draws the charts from.
type htmlData struct {
	// Title is the page title.
	Title string
	// Runs are the runs shown: one for report.html, two for a comparison.
	Runs []htmlRun
	// Compare is the side-by-side table of a comparison (nil for one run).
	Compare *htmlTable
	// Groups pair the arms drawn side by side (one arm each for one run).
	Groups []htmlGroup
	Data   template.JS
	Script template.JS
}

// htmlRun is one run's header: verdict, status, expectations, findings.
type htmlRun struct {
	Label   string
	Run     *Run
	Verdict htmlVerdict
	Status  string
	Origin  string
	Notes   []string
	Arms    []htmlArm
}

// htmlVerdict is the run's verdict as the banner at the top shows it.
type htmlVerdict struct {
	// Word is "passed", "failed", "inconclusive" or "incomplete"; Class the CSS class.
	Word, Class string
	// Detail is one line saying what the verdict rests on.
	Detail string
}

// htmlGroup is one row of charts: the arm at the same position in each run.
type htmlGroup struct {
	Index int
	Title string
	Arms  []*htmlArm
}

// htmlArm is one arm's tables; Missing is set when the run has no arm at
// this position (comparisons only).
type htmlArm struct {
	Group, Column int
	Arm           *Arm
	Missing       bool
	// Named shows the arm's name above its tables (side by side, where the
	// group's heading names both arms).
	Named bool
	// Observation lists an inconclusive arm's reasons and fixes.
	Observation []string
	Phases      *htmlTable
	Trans       *htmlTable
	Compare     *htmlTable
	Latency     *htmlTable
}

// htmlTable is a table whose columns empty on every row are dropped.
type htmlTable struct {
	Class string
	Head  []string
	Rows  [][]htmlCell
}

// htmlCell is one table cell with an optional CSS class.
type htmlCell struct {
	Text, Class string
}

// newTable builds a table from plain rows and drops every column (but the
// first) that is empty on every row.
func newTable(class string, head []string, rows [][]string) *htmlTable {
	t := &htmlTable{Class: class}
	keep := []int{}
	for j := range head {
		used := j == 0
		for _, r := range rows {
			if j < len(r) && strings.TrimSpace(r[j]) != "" {
				used = true
			}
		}
		if used {
			keep = append(keep, j)
		}
	}
	for _, j := range keep {
		t.Head = append(t.Head, head[j])
	}
	for _, r := range rows {
		var row []htmlCell
		for _, j := range keep {
			c := ""
			if j < len(r) {
				c = r[j]
			}
			cell := htmlCell{Text: c}
			if numeric(c) {
				cell.Class = "num"
			}
			row = append(row, cell)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// rowHead reports whether a table row heads a block (its first cell has the class "head").
func rowHead(r []htmlCell) bool { return len(r) > 0 && r[0].Class == "head" }

// numeric reports whether a cell reads as a number ("12", "40 (20.0%)",
// "#19", "+0.4s", "15/s"), which the table aligns right.
func numeric(s string) bool {
	s = strings.TrimLeft(s, "#+-")
	return s != "" && s[0] >= '0' && s[0] <= '9'
}

// reportData is the JSON embedded in the page.
type reportData struct {
	Experiment string `json:"experiment"`
	Complete   bool   `json:"complete"`
	Verdict    string `json:"verdict"`
	// Width is the chart width in SVG units (narrower side by side).
	Width int `json:"width"`
	// Columns is 1 for a report, 2 for a comparison.
	Columns int `json:"columns"`
	// Arms are every arm drawn, each with its group and column.
	Arms []htmlArmData `json:"arms"`
}

// htmlArmData is one arm's chart data and where it is drawn.
type htmlArmData struct {
	htmlSeries
	// Group is the row of charts, Column the run (0 or 1).
	Group  int `json:"group"`
	Column int `json:"column"`
}

// htmlVerdictOf is the banner for run.
func htmlVerdictOf(run *Run) htmlVerdict {
	held, failed, incon := 0, 0, 0
	for _, e := range run.Expectations {
		switch {
		case e.Inconclusive:
			incon++
		case e.OK:
			held++
		default:
			failed++
		}
	}
	var armsIncon []string
	for i := range run.Arms {
		if run.Arms[i].Inconclusive() {
			armsIncon = append(armsIncon, run.Arms[i].Name)
		}
	}
	n := len(run.Expectations)
	if !run.Complete {
		return htmlVerdict{Word: VerdictIncomplete, Class: "v-incomplete",
			Detail: "the run did not finish (" + runStatus(run) + "): the page shows what was measured before it stopped; no verdict"}
	}
	switch run.Decide() {
	case VerdictFailed:
		return htmlVerdict{Word: VerdictFailed, Class: "v-failed",
			Detail: fmt.Sprintf("%d of %d expectations failed: the breaker did not behave as asserted", failed, n)}
	case VerdictInconclusive:
		parts := []string{}
		if incon > 0 {
			parts = append(parts, fmt.Sprintf("%d of %d expectations could not be decided", incon, n))
		}
		if len(armsIncon) > 0 {
			parts = append(parts, "arms without enough evidence: "+strings.Join(armsIncon, ", "))
		}
		return htmlVerdict{Word: VerdictInconclusive, Class: "v-inconclusive",
			Detail: "cbprobe could not observe enough to decide: " + strings.Join(parts, "; ")}
	case VerdictIncomplete:
		return htmlVerdict{Word: VerdictIncomplete, Class: "v-incomplete", Detail: runStatus(run)}
	}
	if n == 0 {
		return htmlVerdict{Word: VerdictPassed, Class: "v-passed", Detail: "no expectations were set; every arm's evidence agreed"}
	}
	return htmlVerdict{Word: VerdictPassed, Class: "v-passed", Detail: fmt.Sprintf("all %d expectations held", held)}
}

// htmlRunOf builds the header and tables of rec at column col.
func htmlRunOf(rec *Record, label string, col int) htmlRun {
	run := &rec.Run
	r := htmlRun{Label: label, Run: run, Verdict: htmlVerdictOf(run), Status: runStatus(run), Notes: rec.Warnings}
	if t0 := rec.Origin(); !t0.IsZero() {
		r.Origin = t0.UTC().Format("2006-01-02 15:04:05.000Z")
	}
	for i := range run.Arms {
		r.Arms = append(r.Arms, htmlArmOf(rec, i, col))
	}
	return r
}

// htmlArmOf builds the tables of the arm at index i of rec.
func htmlArmOf(rec *Record, i, col int) htmlArm {
	a := &rec.Run.Arms[i]
	ha := htmlArm{Group: i, Column: col, Arm: a, Observation: observationLines(a)}
	phases := append([]PhaseStats{}, a.Phases...)
	if len(phases) > 1 {
		phases = append(phases, a.Totals())
	}
	var rows [][]string
	for j, p := range phases {
		r := phaseRate(p, j == len(a.Phases))
		dur := ""
		if p.Duration > 0 && j < len(a.Phases) {
			dur = seconds(p.Duration)
		}
		rows = append(rows, []string{p.Name, r, dur, strconv.Itoa(p.Planned), strconv.Itoa(p.Sent),
			countShare(p.Succeeded, p.Sent), countShare(p.Rejected, p.Sent), countShare(p.Failed, p.Sent),
			strconv.Itoa(p.Dropped), strconv.Itoa(p.Late)})
	}
	ha.Phases = newTable("phases", []string{"phase", "rate", "planned length", "planned", "sent", "succeeded", "rejected", "failed", "dropped", "late"}, rows)

	rows = nil
	for _, t := range a.Transitions {
		ev, req := "", ""
		if t.Cause != "" {
			ev = causeEvidence(t.Evidence)
		}
		if t.Request > 0 {
			req = seqOrNone(t.Request)
		}
		unc := t.Uncertainty
		if t.Inferred && unc == "" {
			unc = "inferred"
		}
		rows = append(rows, []string{relTime(t.At, rec.Origin()), t.From + " → " + t.To, t.Cause, req, ev, unc})
	}
	if len(rows) > 0 {
		ha.Trans = newTable("left transitions", []string{"at", "transition", "cause", "request", "evidence", "uncertainty"}, rows)
	}

	rows = nil
	for _, c := range a.Comparisons {
		u := unitSuffix(c.Unit)
		band := "inside"
		switch {
		case c.Inconclusive:
			band = "inconclusive"
		case c.OutsideBand:
			band = "outside"
		}
		rep := ""
		if c.Reported != nil {
			rep = num(*c.Reported) + u
		}
		rows = append(rows, []string{c.Metric, num(c.Measured) + u, num(c.PredictedP5) + u,
			num(c.PredictedP50) + u, num(c.PredictedP95) + u, band, rep, c.Note})
	}
	if len(rows) > 0 {
		ha.Compare = newTable("comparisons", []string{"metric", "measured", "predicted p5", "p50", "p95", "band", "field report", "note"}, rows)
		for _, r := range ha.Compare.Rows {
			for j := range r {
				if ha.Compare.Head[j] == "band" && r[j].Text != "inside" {
					r[j].Class = "warn"
				}
			}
		}
	}
	if l := latencyRow(rec.Requests, a.Name); l != nil {
		ha.Latency = newTable("latency", []string{"latency (ms)", "p50", "p90", "p95", "p99", "max"},
			[][]string{append([]string{"all requests"}, l...)})
	}
	return ha
}

// WriteHTML writes report.html for rec: one self-contained file (inline CSS,
// an inline script drawing SVG charts, no network). At the top, the run's
// verdict (passed, failed, inconclusive, incomplete) in its colour; then the
// expectations and, per arm, its tables and charts on one time axis with the
// traffic phases shaded and named and pauses hatched: breaker state with the
// cause of each OPEN, failure and slow-call rates against their thresholds,
// requests per second by outcome, failed requests by kind, the breaker's
// calls (gateway attempts by outcome and error, calls refused), its window
// (buffered, failed, slow, not permitted), Retry and TimeLimiter events, and
// latency p50/p90/p95/p99 per second. A panel whose series the run directory
// does not hold says so instead of drawing an empty chart. The time axis
// zooms and pans (buttons, drag, Ctrl+wheel; #view=A-B in the address zooms
// every arm to A..B seconds from its start).
//
// The chart data sits in a <script type="application/json" id="cbprobe-data">
// element, escaped so that no string can close it. Once drawn, the page sets
// data-charts-rendered="N" on <body>; script errors go to #script-errors.
func WriteHTML(w io.Writer, rec *Record) error {
	run := &rec.Run
	hr := htmlRunOf(rec, "", 0)
	d := htmlData{Title: "cbprobe " + run.Experiment, Runs: []htmlRun{hr}}
	rd := reportData{Experiment: run.Experiment, Complete: run.Complete, Verdict: hr.Verdict.Word, Width: 900, Columns: 1, Arms: []htmlArmData{}}
	for i := range run.Arms {
		rd.Arms = append(rd.Arms, htmlArmData{htmlSeries: htmlSeriesOf(rec, i), Group: i})
		d.Groups = append(d.Groups, htmlGroup{Index: i, Title: "Arm " + run.Arms[i].Name, Arms: []*htmlArm{&d.Runs[0].Arms[i]}})
	}
	return renderHTML(w, d, rd)
}

// renderHTML embeds rd in d and executes the page template.
func renderHTML(w io.Writer, d htmlData, rd reportData) error {
	// json.Marshal escapes <, > and & (and U+2028/2029) as \u00XX, so no
	// string in the data can end the <script> element it sits in.
	raw, err := json.Marshal(rd)
	if err != nil {
		return fmt.Errorf("encode report data: %w", err)
	}
	d.Data = template.JS(raw) // #nosec: escaped JSON, see above
	d.Script = template.JS(reportScript)
	t, err := template.New("report").Funcs(template.FuncMap{
		"rowHead": rowHead, "firstOpen": firstOpenText, "firstRejected": firstRejectedText, "num": num, "detail": expectationDetail,
	}).Parse(reportTemplate)
	if err != nil {
		return fmt.Errorf("parse report template: %w", err)
	}
	if err := t.Execute(w, d); err != nil {
		return fmt.Errorf("render report: %w", err)
	}
	return nil
}

// WriteHTMLFile rewrites rec.Dir/report.html from rec (through a temporary
// file and a rename), as `cbprobe report --html` does.
func WriteHTMLFile(rec *Record) error {
	return writeFileAtomic(rec.Dir, HTMLFile, func(w io.Writer) error { return WriteHTML(w, rec) })
}
