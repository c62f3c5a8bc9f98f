package results

import (
	"fmt"
	"io"
	"strings"
)

// WriteHTMLComparison writes one self-contained page setting two runs side
// by side, as `cbprobe report A B --html` does: both verdicts at the top, a
// table of what differs (cells that differ are marked), then per arm pair
// (arms paired by position, as in WriteComparison) both arms' tables and
// charts in two columns. The charts of a pair share one time view, counted
// from each arm's start, so zooming or panning one moves both. labelA and
// labelB name the runs (for example their directories' base names).
func WriteHTMLComparison(w io.Writer, a, b *Record, labelA, labelB string) error {
	recs := []*Record{a, b}
	d := htmlData{Title: fmt.Sprintf("cbprobe: %s against %s", labelA, labelB),
		Runs: []htmlRun{htmlRunOf(a, labelA, 0), htmlRunOf(b, labelB, 1)}}
	rd := reportData{Experiment: a.Run.Experiment + " / " + b.Run.Experiment, Complete: a.Run.Complete && b.Run.Complete,
		Verdict: d.Runs[0].Verdict.Word + " / " + d.Runs[1].Verdict.Word, Width: 640, Columns: 2, Arms: []htmlArmData{}}
	n := max(len(a.Run.Arms), len(b.Run.Arms))
	for i := range n {
		g := htmlGroup{Index: i}
		names := [2]string{"–", "–"}
		for c, rec := range recs {
			if i >= len(rec.Run.Arms) {
				g.Arms = append(g.Arms, &htmlArm{Group: i, Column: c, Missing: true})
				continue
			}
			ha := &d.Runs[c].Arms[i]
			ha.Named = true
			g.Arms = append(g.Arms, ha)
			names[c] = rec.Run.Arms[i].Name
			rd.Arms = append(rd.Arms, htmlArmData{htmlSeries: htmlSeriesOf(rec, i), Group: i, Column: c})
		}
		g.Title = fmt.Sprintf("Arm %d: %s", i+1, names[0])
		if names[1] != names[0] {
			g.Title += " against " + names[1]
		}
		d.Groups = append(d.Groups, g)
	}
	d.Compare = compareTable(a, b, labelA, labelB)
	return renderHTML(w, d, rd)
}

// compareTable is the side-by-side table of two runs: verdict, expectations,
// and per arm pair the phase outcome shares, first OPEN and first rejected
// request, the first OPEN's cause, attempts per request and latency.
func compareTable(a, b *Record, labelA, labelB string) *htmlTable {
	var rows [][]string
	add := func(name, va, vb string) { rows = append(rows, []string{name, va, vb}) }
	add("experiment", a.Run.Experiment, b.Run.Experiment)
	add("verdict", htmlVerdictOf(&a.Run).Word, htmlVerdictOf(&b.Run).Word)
	add("expectations held", held(&a.Run), held(&b.Run))
	add("took", durationText(&a.Run), durationText(&b.Run))
	n := max(len(a.Run.Arms), len(b.Run.Arms))
	for i := range n {
		aa, ab := armAt(&a.Run, i), armAt(&b.Run, i)
		add(fmt.Sprintf("arm %d", i+1), aa.Name, ab.Name)
		for _, r := range armCompareRows(aa, ab) {
			add(r.name, r.a, r.b)
		}
		la, lb := latencyRow(a.Requests, aa.Name), latencyRow(b.Requests, ab.Name)
		for k, q := range []string{"p50", "p90", "p95", "p99"} {
			add("  latency "+q+" (ms)", cellAt(la, k), cellAt(lb, k))
		}
	}
	t := newTable("compare", []string{"", labelA, labelB}, rows)
	for _, r := range t.Rows {
		switch name := r[0].Text; {
		case strings.HasPrefix(name, "  "):
			r[0].Text, r[0].Class = strings.TrimSpace(name), "sub"
		case strings.HasPrefix(name, "arm "):
			r[0].Class = "head"
		}
		if len(r) == 3 && r[1].Text != r[2].Text {
			r[1].Class += " diff"
			r[2].Class += " diff"
		}
	}
	return t
}

func held(r *Run) string {
	ok := 0
	for _, e := range r.Expectations {
		if e.OK {
			ok++
		}
	}
	return fmt.Sprintf("%d of %d", ok, len(r.Expectations))
}

func durationText(r *Run) string {
	if d := runDuration(r); d > 0 {
		return seconds(d)
	}
	return "–"
}

func cellAt(row []string, i int) string {
	if i < len(row) {
		return row[i]
	}
	return "–"
}
