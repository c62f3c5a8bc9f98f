package results

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fatih/color"
)

// TextOptions control the terminal rendering.
type TextOptions struct {
	// Color adds ANSI colour codes. Callers set it only for a terminal with
	// colour enabled (--color, NO_COLOR); files and pipes get plain text.
	Color bool
}

// Styles used by the terminal rendering; paint turns them into fatih/color
// attributes.
const (
	ansiBold   = "bold"
	ansiRed    = "red"
	ansiGreen  = "green"
	ansiYellow = "yellow"
	ansiCyan   = "cyan"
	ansiFaint  = "faint"
)

// styleAttr is the fatih/color attribute of a style above.
func styleAttr(style string) color.Attribute {
	switch style {
	case ansiBold:
		return color.Bold
	case ansiRed:
		return color.FgRed
	case ansiGreen:
		return color.FgGreen
	case ansiYellow:
		return color.FgYellow
	case ansiCyan:
		return color.FgCyan
	case ansiFaint:
		return color.Faint
	}
	return color.Reset
}

// paint wraps s in style's colour when colour is on. The colour is enabled on
// this one color.Color, never through fatih/color's package-wide NoColor, so
// two renderings in one process cannot race.
func (o TextOptions) paint(style, s string) string {
	if !o.Color || style == "" || s == "" {
		return s
	}
	c := color.New(styleAttr(style))
	c.EnableColor()
	return c.Sprint(s)
}

// stateColor is the colour of a breaker state name.
func stateColor(s string) string {
	switch s {
	case "OPEN", "FORCED_OPEN":
		return ansiRed
	case "HALF_OPEN":
		return ansiYellow
	case "CLOSED":
		return ansiGreen
	}
	return ""
}

// cell is one table cell: plain text and an optional colour.
type cell struct {
	text, color string
	right       bool
}

// writeTable pads cells on their plain width, then colours them, so ANSI
// codes never upset the alignment.
func writeTable(b *bufio.Writer, o TextOptions, indent string, rows [][]cell) {
	var widths []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c.text))
		}
	}
	for _, r := range rows {
		var line strings.Builder
		line.WriteString(indent)
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c.text))
			if i > 0 {
				line.WriteString("  ")
			}
			if c.right {
				line.WriteString(pad + o.paint(c.color, c.text))
			} else if i < len(r)-1 {
				line.WriteString(o.paint(c.color, c.text) + pad)
			} else {
				line.WriteString(o.paint(c.color, c.text))
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
}

// WriteText writes the terminal summary of run: status, per arm its phase
// table, first OPEN and first rejected request and transitions with causes,
// then findings and expectations.
func WriteText(w io.Writer, run *Run, o TextOptions) error {
	b := bufio.NewWriter(w)
	status := runStatus(run)
	statusColor := ansiGreen
	if !run.Complete || run.Decide() != VerdictPassed {
		statusColor = ansiYellow
	}
	if run.Complete && run.Decide() == VerdictFailed {
		statusColor = ansiRed
	}
	head := o.paint(ansiBold, "cbprobe "+run.Experiment) + "  " + o.paint(statusColor, status)
	if run.Target != "" {
		head += "  target " + run.Target
	}
	if d := runDuration(run); d > 0 {
		head += "  " + seconds(d)
	}
	b.WriteString(head + "\n")
	for i := range run.Arms {
		writeTextArm(b, run, &run.Arms[i], o)
	}
	if len(run.Findings) > 0 {
		b.WriteString("\n" + o.paint(ansiBold, "findings") + "\n")
		for _, g := range GroupFindings(run.Findings) {
			f := g.Finding
			c := ansiCyan
			switch f.Severity {
			case SeverityError:
				c = ansiRed
			case SeverityWarning:
				c = ansiYellow
			}
			line := "  " + o.paint(c, "["+f.Severity+"]") + " " + f.Title + " (" + f.ID
			if a := armList(g.Arms); a != "" {
				line += ", " + a
			}
			b.WriteString(line + ")\n")
			if f.Fix != "" {
				b.WriteString("    fix: " + f.Fix + "\n")
			}
		}
		if ff := run.FailingFindings(); len(ff) > 0 {
			b.WriteString("  " + o.paint(ansiRed, "FAIL") + fmt.Sprintf("  --fail-on %s: %s of severity %s or worse\n", run.FailOn, plural(len(ff), "finding"), run.FailOn))
		}
	}
	if len(run.Expectations) > 0 {
		b.WriteString("\n" + o.paint(ansiBold, "expectations") + "\n")
		for _, e := range run.Expectations {
			mark := o.paint(ansiGreen, "PASS")
			switch {
			case e.Inconclusive:
				mark = o.paint(ansiYellow, "INCONCLUSIVE")
			case !e.OK:
				mark = o.paint(ansiRed, "FAIL")
			}
			line := "  " + mark + "  " + expectationLabel(e)
			if d := expectationDetail(e); d != "" {
				line += "  " + o.paint(ansiFaint, "("+d+")")
			}
			b.WriteString(line + "\n")
		}
	}
	for _, s := range run.Warnings {
		b.WriteString(o.paint(ansiYellow, "warning: ") + s + "\n")
	}
	return b.Flush()
}

// expectationLabel is the expression with the arm it was checked on, e.g.
// "arm retry-3: opens>=1"; an expression that names its arm is shown as written.
func expectationLabel(e Expectation) string {
	if e.Arm == "" || strings.HasPrefix(strings.TrimSpace(e.Expr), "arm[") {
		return e.Expr
	}
	return "arm " + e.Arm + ": " + e.Expr
}

func writeTextArm(b *bufio.Writer, run *Run, a *Arm, o TextOptions) {
	b.WriteString("\n" + o.paint(ansiBold, "arm "+a.Name))
	if a.Breaker != "" {
		b.WriteString("  breaker " + a.Breaker)
	}
	b.WriteString("\n")
	rows := [][]cell{{{text: "phase"}, {text: "rate", right: true}, {text: "planned", right: true}, {text: "sent", right: true},
		{text: "succeeded", right: true}, {text: "rejected", right: true}, {text: "failed", right: true},
		{text: "dropped", right: true}, {text: "late", right: true}}}
	phases := append([]PhaseStats{}, a.Phases...)
	if len(phases) > 1 {
		phases = append(phases, a.Totals())
	}
	for i, p := range phases {
		r := phaseRate(p, i == len(a.Phases))
		planned := ""
		if p.Planned > 0 || p.Rate > 0 {
			planned = strconv.Itoa(p.Planned)
		}
		warn := func(n int) string {
			if n > 0 {
				return ansiYellow
			}
			return ""
		}
		rej := ""
		if p.Rejected > 0 {
			rej = ansiRed
		}
		fail := ""
		if p.Failed > 0 {
			fail = ansiRed
		}
		rows = append(rows, []cell{{text: p.Name}, {text: r, right: true}, {text: planned, right: true},
			{text: strconv.Itoa(p.Sent), right: true},
			{text: countShare(p.Succeeded, p.Sent), right: true, color: ansiGreen},
			{text: countShare(p.Rejected, p.Sent), right: true, color: rej},
			{text: countShare(p.Failed, p.Sent), right: true, color: fail},
			{text: strconv.Itoa(p.Dropped), right: true, color: warn(p.Dropped)},
			{text: strconv.Itoa(p.Late), right: true, color: warn(p.Late)}})
	}
	writeTable(b, o, "  ", rows)
	facts := []string{firstOpenText(a), firstRejectedText(a)}
	if a.AttemptsPerRequest > 0 {
		facts = append(facts, "attempts/request "+num(a.AttemptsPerRequest))
	}
	if a.Latency.P50 > 0 || a.Latency.P99 > 0 {
		facts = append(facts, fmt.Sprintf("latency p50 %sms p95 %sms p99 %sms", num(a.Latency.P50), num(a.Latency.P95), num(a.Latency.P99)))
	}
	b.WriteString("  " + strings.Join(facts, "  ") + "\n")
	for _, l := range observationLines(a) {
		b.WriteString("  " + o.paint(ansiYellow, l) + "\n")
	}
	for _, t := range a.Transitions {
		line := fmt.Sprintf("  %s %s → %s", relTime(t.At, run.Started), o.paint(stateColor(t.From), t.From), o.paint(stateColor(t.To), t.To))
		if t.Cause != "" {
			line += "  " + o.paint(ansiBold, t.Cause)
		}
		if ev := causeEvidence(t.Evidence); ev != "" && t.Cause != "" {
			line += "  " + ev
		}
		if t.Uncertainty != "" {
			line += "  " + o.paint(ansiYellow, "("+t.Uncertainty+")")
		}
		b.WriteString(line + "\n")
	}
	for _, l := range fleetLines(a.Fleet) {
		b.WriteString("  " + l + "\n")
	}
	for _, c := range a.Comparisons {
		u := unitSuffix(c.Unit)
		line := fmt.Sprintf("  %s: measured %s, predicted %s [%s, %s]", c.Metric, num(c.Measured)+u, num(c.PredictedP50)+u, num(c.PredictedP5)+u, num(c.PredictedP95)+u)
		switch {
		case c.Inconclusive:
			line += " " + o.paint(ansiYellow, "inconclusive")
		case c.OutsideBand:
			line += " " + o.paint(ansiYellow, "outside band")
		}
		b.WriteString(line + "\n")
	}
}

// WriteComparison writes two runs side by side: per arm pair (by position)
// the phase outcome shares, first OPEN and first rejected request, the first
// OPEN cause and the expectation verdicts.
func WriteComparison(w io.Writer, a, b *Run, labelA, labelB string, o TextOptions) error {
	bw := bufio.NewWriter(w)
	rows := [][]cell{{{text: ""}, {text: labelA, color: ansiBold}, {text: labelB, color: ansiBold}}}
	add := func(name, va, vb string) {
		c := ""
		if va != vb {
			c = ansiYellow
		}
		rows = append(rows, []cell{{text: name}, {text: va, color: c}, {text: vb, color: c}})
	}
	add("experiment", a.Experiment, b.Experiment)
	add("status", runStatus(a), runStatus(b))
	add("expectations held", expectationCount(a), expectationCount(b))
	n := max(len(a.Arms), len(b.Arms))
	for i := range n {
		aa, ab := armAt(a, i), armAt(b, i)
		add("arm", aa.Name, ab.Name)
		for _, r := range armCompareRows(aa, ab) {
			add(r.name, r.a, r.b)
		}
	}
	writeTable(bw, o, "", rows)
	return bw.Flush()
}

func expectationCount(r *Run) string {
	ok := 0
	for _, e := range r.Expectations {
		if e.OK {
			ok++
		}
	}
	return fmt.Sprintf("%d/%d", ok, len(r.Expectations))
}

func armAt(r *Run, i int) *Arm {
	if i < len(r.Arms) {
		return &r.Arms[i]
	}
	return &Arm{Name: "–"}
}

func phaseAt(a *Arm, i int) PhaseStats {
	if i < len(a.Phases) {
		return a.Phases[i]
	}
	return PhaseStats{}
}

func firstOpenCause(a *Arm) string { return orDash(a.FirstOpenCause()) }

// Progress is the state of a running attack for the live progress line.
type Progress struct {
	// Elapsed is the time since the attack started; Total its planned length (0 unknown).
	Elapsed, Total time.Duration
	// Rate is the send rate over the last interval in requests per second.
	Rate float64
	// Sent, Succeeded, Rejected and Failed count finished requests so far.
	Sent, Succeeded, Rejected, Failed int
	// State is the breaker state from the last poll ("" when not polled).
	State string
	// Backlog is the writer's queued record count (shown when above zero).
	Backlog int
}

// ProgressLine formats p as one line without a line break, e.g.
// "12.0s/28.0s  15.0 req/s  sent 180  ok 170  rejected 5  failed 5  CLOSED".
func ProgressLine(p Progress, o TextOptions) string {
	s := seconds(p.Elapsed)
	if p.Total > 0 {
		s += "/" + seconds(p.Total)
	}
	s += fmt.Sprintf("  %s req/s  sent %d  %s  %s  %s", strconv.FormatFloat(p.Rate, 'f', 1, 64), p.Sent,
		o.paint(ansiGreen, fmt.Sprintf("ok %d", p.Succeeded)), o.paint(ansiYellow, fmt.Sprintf("rejected %d", p.Rejected)),
		o.paint(ansiRed, fmt.Sprintf("failed %d", p.Failed)))
	if p.State != "" {
		s += "  " + o.paint(stateColor(p.State), p.State)
	}
	if p.Backlog > 0 {
		s += fmt.Sprintf("  backlog %d", p.Backlog)
	}
	return s
}

// attempts formats AttemptsPerRequest, "–" when unmeasured.
func attempts(a *Arm) string {
	if a.AttemptsPerRequest <= 0 {
		return "–"
	}
	return num(a.AttemptsPerRequest)
}

// fleetLines describes a fleet run: the fleet, then one line per replica.
func fleetLines(f *Fleet) []string {
	if f == nil {
		return nil
	}
	lines := []string{fmt.Sprintf("fleet: %d replicas, at most %d OPEN at once, %.1f%% of requests refused at the entry point",
		len(f.Instances), f.MaxOpen, 100*f.RefusedShare)}
	for _, in := range f.Instances {
		l := "  " + in.Breaker + ": "
		if in.FirstOpenRequest > 0 {
			l += fmt.Sprintf("first OPEN at request #%d by %s, %d OPEN(s)", in.FirstOpenRequest, in.FirstOpenCause, in.Opens)
		} else {
			l += "never opened"
		}
		if in.Observation != nil && in.Observation.Verdict == VerdictInconclusive {
			l += "; inconclusive: " + strings.Join(in.Observation.Reasons, "; ")
		} else if in.Observation != nil && len(in.Observation.Gaps) > 0 {
			l += fmt.Sprintf("; %d stretch(es) without its metrics", len(in.Observation.Gaps))
		}
		lines = append(lines, l)
	}
	return lines
}
