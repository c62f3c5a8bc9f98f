package results

import (
	"fmt"
	"slices"
	"strings"
)

// Finding severities, from the most to the least severe.
const (
	// SeverityError: the breaker cannot work as configured (it can never close,
	// the settings did not apply).
	SeverityError = "error"
	// SeverityWarning: a trap that changes when or why the breaker opens.
	SeverityWarning = "warning"
	// SeverityInfo: a remark or an assumption.
	SeverityInfo = "info"
)

// FailOnLevels are the values --fail-on accepts: the lowest finding severity
// that fails a run. "none" (or "") leaves findings out of the verdict.
func FailOnLevels() []string { return []string{"none", SeverityWarning, SeverityError} }

// CheckFailOn reports whether level is one of FailOnLevels or empty.
func CheckFailOn(level string) error {
	if level == "" || slices.Contains(FailOnLevels(), level) {
		return nil
	}
	return fmt.Errorf("%q is not one of %s", level, strings.Join(FailOnLevels(), ", "))
}

// severityRank orders severities: error 3, warning 2, info 1, anything else 0.
func severityRank(s string) int {
	switch s {
	case SeverityError:
		return 3
	case SeverityWarning:
		return 2
	case SeverityInfo:
		return 1
	}
	return 0
}

// AtLeast reports whether severity is level or worse ("error" is at least
// "warning"); an empty, "none" or unknown level is reached by nothing.
func AtLeast(severity, level string) bool {
	want := severityRank(level)
	return want > 0 && severityRank(severity) >= want
}

// FailingFindings are the findings that fail the run: severity FailOn or
// worse, on a whole run or on an arm whose evidence was consistent. A finding
// on an inconclusive arm never fails the run (the arm is inconclusive: never
// failed, never passed). Nil when FailOn is empty or "none".
func (r *Run) FailingFindings() []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if r.findingFails(f) {
			out = append(out, f)
		}
	}
	return out
}

// findingFails reports whether f is one of FailingFindings.
func (r *Run) findingFails(f Finding) bool {
	if !AtLeast(f.Severity, r.FailOn) {
		return false
	}
	if f.Arm != "" {
		if a := r.Arm(f.Arm); a != nil && a.Inconclusive() {
			return false
		}
	}
	return true
}

// FindingGroup is one finding that holds for one or more arms: the same id,
// severity, title and fix reported for each of them.
type FindingGroup struct {
	// Finding is the first of the group (its Arm is the first arm's).
	Finding Finding
	// Arms are the arms it holds for, in order; empty for a run-wide finding.
	Arms []string
}

// GroupFindings merges findings that differ only in their arm, so a finding
// that holds for several arms is shown once, naming them. Order is that of
// each group's first finding.
func GroupFindings(fs []Finding) []FindingGroup {
	var out []FindingGroup
	at := map[string]int{}
	for _, f := range fs {
		key := strings.Join([]string{f.ID, f.Severity, f.Title, f.Detail, f.Fix, f.Setting}, "\x00")
		i, ok := at[key]
		if !ok {
			i = len(out)
			at[key] = i
			out = append(out, FindingGroup{Finding: f})
		}
		if f.Arm != "" && !slices.Contains(out[i].Arms, f.Arm) {
			out[i].Arms = append(out[i].Arms, f.Arm)
		}
	}
	return out
}

// armList is "arm A" or "arms A, B".
func armList(arms []string) string {
	switch len(arms) {
	case 0:
		return ""
	case 1:
		return "arm " + arms[0]
	}
	return "arms " + strings.Join(arms, ", ")
}

// plural is "1 finding" or "3 findings".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
