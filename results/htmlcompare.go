package results

import (
	"fmt"
	"io"
	"strconv"
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
		aa, ab := armOrNone(&a.Run, i), armOrNone(&b.Run, i)
		add(fmt.Sprintf("arm %d", i+1), aa.Name, ab.Name)
		for j := range max(len(aa.Phases), len(ab.Phases)) {
			pa, pb := phaseOrNone(aa, j), phaseOrNone(ab, j)
			name := pa.Name
			switch {
			case name == "":
				name = pb.Name
			case pb.Name != "" && pb.Name != name:
				name += " | " + pb.Name // phases are paired by position
			}
			add("  "+name+" sent", strconv.Itoa(pa.Sent), strconv.Itoa(pb.Sent))
			add("  "+name+" succeeded", pct(pa.Share(pa.Succeeded)), pct(pb.Share(pb.Succeeded)))
			add("  "+name+" rejected", pct(pa.Share(pa.Rejected)), pct(pb.Share(pb.Rejected)))
			add("  "+name+" failed", pct(pa.Share(pa.Failed)), pct(pb.Share(pb.Failed)))
		}
		ta, tb := aa.Totals(), ab.Totals()
		add("  total rejected", pct(ta.Share(ta.Rejected)), pct(tb.Share(tb.Rejected)))
		add("  first OPEN request", seqOrNone(aa.FirstOpenRequest), seqOrNone(ab.FirstOpenRequest))
		add("  first rejected request", seqOrNone(aa.FirstRejectedRequest), seqOrNone(ab.FirstRejectedRequest))
		add("  first OPEN cause", openCause(aa), openCause(ab))
		add("  transitions", strconv.Itoa(len(aa.Transitions)), strconv.Itoa(len(ab.Transitions)))
		add("  attempts per request", attemptsText(aa), attemptsText(ab))
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

func armOrNone(r *Run, i int) *Arm {
	if i < len(r.Arms) {
		return &r.Arms[i]
	}
	return &Arm{Name: "–"}
}

func phaseOrNone(a *Arm, i int) PhaseStats {
	if i < len(a.Phases) {
		return a.Phases[i]
	}
	return PhaseStats{}
}

func openCause(a *Arm) string {
	for _, t := range a.Transitions {
		if t.To == "OPEN" {
			return orDash(t.Cause)
		}
	}
	return "–"
}

func attemptsText(a *Arm) string {
	if a.AttemptsPerRequest <= 0 {
		return "–"
	}
	return num(a.AttemptsPerRequest)
}

func cellAt(row []string, i int) string {
	if i < len(row) {
		return row[i]
	}
	return "–"
}
