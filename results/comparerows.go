package results

import "strconv"

// compareRow is one line of a side-by-side comparison of two runs: a label and
// the value in each run.
type compareRow struct{ name, a, b string }

// armCompareRows are the rows of one arm pair (paired by position), the one
// definition the terminal comparison (WriteComparison) and the HTML comparison
// (WriteCompareHTML) share: each phase's sent count and outcome shares, the total
// rejected share, the first OPEN and first rejected request, the first OPEN's
// cause (Arm.FirstOpenCause), the number of transitions and attempts per request.
// Sub-rows start with two spaces.
func armCompareRows(aa, ab *Arm) []compareRow {
	var rows []compareRow
	add := func(name, va, vb string) { rows = append(rows, compareRow{name, va, vb}) }
	for j := range max(len(aa.Phases), len(ab.Phases)) {
		pa, pb := phaseAt(aa, j), phaseAt(ab, j)
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
	add("  first OPEN cause", firstOpenCause(aa), firstOpenCause(ab))
	add("  transitions", strconv.Itoa(len(aa.Transitions)), strconv.Itoa(len(ab.Transitions)))
	add("  attempts per request", attempts(aa), attempts(ab))
	return rows
}
