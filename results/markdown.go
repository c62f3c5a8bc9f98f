package results

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// mdCell escapes a table cell: pipes and line breaks.
func mdCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.NewReplacer("\r\n", " ", "\n", " ").Replace(s)
}

// mdCode wraps s in backticks, or in double backticks when it holds one.
func mdCode(s string) string {
	if strings.Contains(s, "`") {
		return "`` " + mdCell(s) + " ``"
	}
	return "`" + mdCell(s) + "`"
}

// WriteMarkdown writes the run summary as GitHub-flavoured markdown, sized
// for a CI job summary: status, expectations with ✅/❌, per arm its phases,
// transitions with causes and theory against measurement, then findings.
func WriteMarkdown(w io.Writer, run *Run) error {
	b := bufio.NewWriter(w)
	icon := "✅"
	switch {
	case !run.Complete:
		icon = "⚠️"
	case run.Decide() == VerdictFailed:
		icon = "❌"
	case run.Decide() == VerdictInconclusive:
		icon = "❔"
	}
	fmt.Fprintf(b, "# %s cbprobe %s\n\n", icon, mdCell(run.Experiment))
	if run.Description != "" {
		fmt.Fprintf(b, "%s\n\n", run.Description)
	}
	facts := []string{"**" + runStatus(run) + "**"}
	if run.Complete {
		facts = append(facts, "verdict **"+run.Decide()+"**")
	}
	if run.Target != "" {
		facts = append(facts, "target "+mdCode(run.Target))
	}
	if !run.Started.IsZero() {
		facts = append(facts, "started "+run.Started.UTC().Format("2006-01-02 15:04:05Z"))
	}
	if d := runDuration(run); d > 0 {
		facts = append(facts, "took "+seconds(d))
	}
	fmt.Fprintf(b, "%s\n\n", strings.Join(facts, " · "))
	if !run.Complete {
		fmt.Fprintf(b, "> [!WARNING]\n> This run is not complete: the numbers below cover only what was measured before it stopped.\n\n")
	}

	if len(run.Expectations) > 0 {
		passed, unknown := 0, 0
		for _, e := range run.Expectations {
			if e.OK {
				passed++
			}
			if e.Inconclusive {
				unknown++
			}
		}
		extra := ""
		if unknown > 0 {
			extra = fmt.Sprintf(", %d inconclusive", unknown)
		}
		fmt.Fprintf(b, "## Expectations: %d of %d held%s\n\n| | expectation | arm | got | want | note |\n|---|---|---|---|---|---|\n", passed, len(run.Expectations), extra)
		for _, e := range run.Expectations {
			mark := "✅"
			switch {
			case e.Inconclusive:
				mark = "❔ inconclusive"
			case !e.OK:
				mark = "❌"
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", mark, mdCode(e.Expr), mdCell(e.Arm), mdCell(e.Got), mdCell(e.Want), mdCell(e.Message))
		}
		b.WriteString("\n")
	}

	if ff := run.FailingFindings(); len(ff) > 0 {
		fmt.Fprintf(b, "> [!CAUTION]\n> **Failed by `--fail-on %s`**: %s of severity %s or worse (below).\n\n",
			mdCell(run.FailOn), plural(len(ff), "finding"), mdCell(run.FailOn))
	}

	for i := range run.Arms {
		writeMarkdownArm(b, run, &run.Arms[i])
	}

	if len(run.Findings) > 0 {
		b.WriteString("## Findings\n\n")
		for _, f := range run.Findings {
			fmt.Fprintf(b, "- **%s** (%s", mdCell(f.Title), mdCode(f.ID))
			if f.Severity != "" {
				fmt.Fprintf(b, ", %s", f.Severity)
			}
			if f.Arm != "" {
				fmt.Fprintf(b, ", arm %s", mdCode(f.Arm))
			}
			b.WriteString(")")
			if f.Detail != "" {
				fmt.Fprintf(b, ": %s", mdCell(f.Detail))
			}
			b.WriteString("\n")
			for _, e := range f.Evidence {
				fmt.Fprintf(b, "  - %s\n", mdCell(e))
			}
			if f.Fix != "" {
				fmt.Fprintf(b, "  - Fix: %s\n", mdCell(f.Fix))
			}
		}
		b.WriteString("\n")
	}
	if len(run.Warnings) > 0 {
		b.WriteString("## Measurement warnings\n\n")
		for _, s := range run.Warnings {
			fmt.Fprintf(b, "- %s\n", mdCell(s))
		}
		b.WriteString("\n")
	}
	return b.Flush()
}

func writeMarkdownArm(b *bufio.Writer, run *Run, a *Arm) {
	fmt.Fprintf(b, "## Arm %s\n\n", mdCode(a.Name))
	if a.Description != "" {
		fmt.Fprintf(b, "%s\n\n", mdCell(a.Description))
	}
	facts := []string{
		firstOpenText(a), firstRejectedText(a),
	}
	if a.AttemptsPerRequest > 0 {
		facts = append(facts, "attempts per request "+num(a.AttemptsPerRequest))
	}
	if a.Breaker != "" {
		facts = append(facts, "breaker "+mdCode(a.Breaker))
	}
	if a.Latency.P50 > 0 || a.Latency.P99 > 0 {
		facts = append(facts, fmt.Sprintf("latency p50 %s ms, p95 %s ms, p99 %s ms", num(a.Latency.P50), num(a.Latency.P95), num(a.Latency.P99)))
	}
	fmt.Fprintf(b, "%s\n\n", strings.Join(facts, " · "))
	if lines := observationLines(a); len(lines) > 0 {
		b.WriteString("> [!CAUTION]\n> **Inconclusive**: cbprobe could not observe this breaker well enough to judge it.\n")
		for _, l := range lines {
			fmt.Fprintf(b, "> - %s\n", mdCell(l))
		}
		b.WriteString("\n")
	}

	b.WriteString("| phase | rate | planned | sent | succeeded | rejected | failed | dropped | late |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	rows := append([]PhaseStats{}, a.Phases...)
	if len(a.Phases) > 1 {
		rows = append(rows, a.Totals())
	}
	for i, p := range rows {
		name, r := mdCell(p.Name), phaseRate(p, i == len(a.Phases))
		if i == len(a.Phases) {
			name = "**total**"
		}
		planned := ""
		if p.Planned > 0 || p.Rate > 0 {
			planned = strconv.Itoa(p.Planned)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %d | %s | %s | %s | %d | %d |\n", name, r, planned, p.Sent,
			countShare(p.Succeeded, p.Sent), countShare(p.Rejected, p.Sent), countShare(p.Failed, p.Sent), p.Dropped, p.Late)
	}
	b.WriteString("\n")

	if len(a.Transitions) > 0 {
		b.WriteString("| at | transition | cause | evidence | request |\n|---|---|---|---|---:|\n")
		for _, t := range a.Transitions {
			ev := ""
			if t.Cause != "" {
				ev = causeEvidence(t.Evidence)
			}
			if t.Uncertainty != "" {
				ev = strings.TrimSpace(ev + " ⚠️ " + t.Uncertainty)
			}
			req := ""
			if t.Request > 0 {
				req = seqOrNone(t.Request)
			}
			fmt.Fprintf(b, "| %s | %s → %s | %s | %s | %s |\n", relTime(t.At, run.Started), t.From, t.To,
				mdCell(orDash(t.Cause)), mdCell(ev), req)
		}
		b.WriteString("\n")
	} else {
		b.WriteString("No breaker transitions were observed.\n\n")
	}
	if f := a.Fleet; f != nil {
		fmt.Fprintf(b, "Fleet: %d replicas, at most %d OPEN at once, %.1f%% of requests refused at the entry point.\n\n",
			len(f.Instances), f.MaxOpen, 100*f.RefusedShare)
		b.WriteString("| replica | first OPEN | cause | OPENs | observation |\n|---|---:|---|---:|---|\n")
		for _, in := range f.Instances {
			obs := "–"
			if in.Observation != nil {
				obs = in.Observation.Verdict
				if len(in.Observation.Reasons) > 0 {
					obs += ": " + strings.Join(in.Observation.Reasons, "; ")
				} else if len(in.Observation.Gaps) > 0 {
					obs += fmt.Sprintf(" (%d stretch(es) without its metrics)", len(in.Observation.Gaps))
				}
			}
			fmt.Fprintf(b, "| %s | %s | %s | %d | %s |\n", mdCell(in.Breaker), seqOrNone(in.FirstOpenRequest), mdCell(orDash(in.FirstOpenCause)), in.Opens, mdCell(obs))
		}
		b.WriteString("\n")
	}

	if len(a.Comparisons) > 0 {
		b.WriteString("| metric | measured | predicted p5 | p50 | p95 | mean | field report | |\n|---|---:|---:|---:|---:|---:|---:|---|\n")
		for _, c := range a.Comparisons {
			mark := "inside band"
			switch {
			case c.Inconclusive:
				mark = "❔ inconclusive"
			case c.OutsideBand:
				mark = "⚠️ outside band"
			}
			if c.Note != "" {
				mark += ": " + c.Note
			}
			rep := ""
			if c.Reported != nil {
				rep = num(*c.Reported) + unitSuffix(c.Unit)
			}
			u := unitSuffix(c.Unit)
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", mdCell(c.Metric), num(c.Measured)+u,
				num(c.PredictedP5)+u, num(c.PredictedP50)+u, num(c.PredictedP95)+u, num(c.PredictedMean)+u, rep, mdCell(mark))
		}
		b.WriteString("\n")
	}
	for _, n := range a.Notes {
		fmt.Fprintf(b, "- %s\n", mdCell(n))
	}
	if len(a.Notes) > 0 {
		b.WriteString("\n")
	}
}

func unitSuffix(u string) string {
	switch u {
	case "", "requests":
		return ""
	case "%":
		return "%"
	default:
		return " " + u
	}
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}
