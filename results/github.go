package results

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Annotation is one GitHub Actions workflow annotation.
type Annotation struct {
	// Level is "error", "warning" or "notice" (the workflow command's name).
	Level string
	// Title is the annotation's title (one line).
	Title string
	// Message is its text; line breaks are kept.
	Message string
}

// String renders a as the workflow command GitHub Actions reads from a
// step's output, e.g. "::error title=cbprobe retry%3A expectation failed::arm retry-3: …",
// with the escapes GitHub defines: % \r \n in the message, and also : and ,
// in the title.
func (a Annotation) String() string {
	s := "::" + a.Level
	if a.Title != "" {
		s += " title=" + escapeProperty(a.Title)
	}
	return s + "::" + escapeData(a.Message)
}

func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// Annotations lists what a CI job should see of run: an error for every
// expectation that failed, a warning for every inconclusive expectation and
// inconclusive arm, and one annotation for every finding (merged over the
// arms it holds for): an error when it fails the run (Run.FailingFindings) or has
// severity error, a warning for severity warning, a notice otherwise. An
// unfinished run adds a warning saying so. A passed expectation adds nothing.
func Annotations(run *Run) []Annotation {
	var out []Annotation
	name := "cbprobe " + run.Experiment
	if !run.Complete {
		out = append(out, Annotation{Level: "warning", Title: name + ": run not complete",
			Message: strings.TrimSpace("the numbers cover only what was measured before it stopped " + paren(run.Reason))})
	}
	for _, e := range run.Expectations {
		msg := e.Expr
		if e.Arm != "" {
			msg = "arm " + e.Arm + ": " + msg
		}
		if d := expectationDetail(e); d != "" {
			msg += " (" + d + ")"
		}
		switch {
		case e.Inconclusive:
			out = append(out, Annotation{Level: "warning", Title: name + ": expectation inconclusive", Message: msg})
		case !e.OK:
			out = append(out, Annotation{Level: "error", Title: name + ": expectation failed", Message: msg})
		}
	}
	for i := range run.Arms {
		if lines := observationLines(&run.Arms[i]); len(lines) > 0 {
			out = append(out, Annotation{Level: "warning", Title: name + ": arm " + run.Arms[i].Name + " inconclusive",
				Message: strings.Join(lines, "\n")})
		}
	}
	for _, g := range GroupFindings(run.Findings) {
		f := g.Finding
		level := "notice"
		switch {
		case f.Severity == SeverityError || run.findingFails(f):
			level = "error"
		case f.Severity == SeverityWarning:
			level = "warning"
		}
		title := fmt.Sprintf("%s: %s %s", name, f.Severity, f.ID)
		if a := armList(g.Arms); a != "" {
			title += " (" + a + ")"
		}
		msg := f.Title
		if f.Fix != "" {
			msg += "\nFix: " + f.Fix
		}
		out = append(out, Annotation{Level: level, Title: title, Message: msg})
	}
	return out
}

// WriteAnnotations writes Annotations(run), one workflow command a line.
func WriteAnnotations(w io.Writer, run *Run) error {
	b := bufio.NewWriter(w)
	for _, a := range Annotations(run) {
		b.WriteString(a.String() + "\n")
	}
	return b.Flush()
}

// AppendStepSummary appends the run's summary.md (from the run directory dir;
// rendered from run when the file is missing) to the file at path, the way
// GitHub Actions collects a job summary from $GITHUB_STEP_SUMMARY. It creates
// the file when needed and separates the summary from earlier content by a
// blank line.
func AppendStepSummary(path, dir string, run *Run) error {
	var body []byte
	if dir != "" {
		data, err := os.ReadFile(filepath.Join(dir, SummaryFile))
		if err == nil {
			body = data
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("read summary for the job summary: %w", err)
		}
	}
	if body == nil {
		var sb strings.Builder
		if err := WriteMarkdown(&sb, run); err != nil {
			return fmt.Errorf("render summary for the job summary: %w", err)
		}
		body = []byte(sb.String())
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("append to job summary %s: %w", path, err)
	}
	st, err := f.Stat()
	if err == nil && st.Size() > 0 {
		body = append([]byte("\n"), body...)
	}
	if _, err := f.Write(body); err != nil {
		_ = f.Close()
		return fmt.Errorf("append to job summary %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("append to job summary %s: %w", path, err)
	}
	return nil
}
