package results

import (
	"encoding/xml"
	"io"
	"strconv"
	"strings"
	"time"
)

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr,omitempty"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Error     *junitFailure `xml:"error,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes run's expectations as JUnit XML: one testsuite for the
// run, one testcase per expectation, a <failure> for each that did not hold,
// and a failing testcase for each finding that fails the run (Run.FailOn).
// Properties record the experiment, completeness and interruption.
func WriteJUnit(w io.Writer, run *Run) error {
	suite := junitSuite{
		Name:  "cbprobe." + run.Experiment,
		Tests: len(run.Expectations),
		Time:  strconv.FormatFloat(runDuration(run).Seconds(), 'f', 3, 64),
		Properties: []junitProperty{
			{Name: "experiment", Value: run.Experiment},
			{Name: "complete", Value: strconv.FormatBool(run.Complete)},
			{Name: "interrupted", Value: strconv.FormatBool(run.Interrupted)},
			{Name: "verdict", Value: verdictOf(run)},
		},
	}
	if !run.Started.IsZero() {
		suite.Timestamp = run.Started.UTC().Format(time.RFC3339)
	}
	if run.Reason != "" {
		suite.Properties = append(suite.Properties, junitProperty{Name: "reason", Value: run.Reason})
	}
	for _, e := range run.Expectations {
		c := junitCase{Name: e.Expr, Classname: "cbprobe." + run.Experiment}
		if e.Arm != "" {
			c.Classname += "." + e.Arm
		}
		if e.Inconclusive {
			// An error, not a skip: an inconclusive run is never green in CI.
			suite.Errors++
			c.Error = &junitFailure{Message: expectationDetail(e), Type: "inconclusive", Text: e.Expr + ": " + expectationDetail(e)}
		} else if e.OK {
			c.SystemOut = expectationDetail(e)
		} else {
			suite.Failures++
			msg := expectationDetail(e)
			if msg == "" {
				msg = "expectation failed"
			}
			c.Failure = &junitFailure{Message: msg, Type: "expectation", Text: e.Expr + ": " + msg}
		}
		suite.Cases = append(suite.Cases, c)
	}
	for _, g := range GroupFindings(run.FailingFindings()) {
		f := g.Finding
		suite.Tests++
		suite.Failures++
		msg := f.Title
		if a := armList(g.Arms); a != "" {
			msg += " (" + a + ")"
		}
		text := msg
		if f.Fix != "" {
			text += "\nfix: " + f.Fix
		}
		suite.Cases = append(suite.Cases, junitCase{Name: "finding " + f.ID + " (--fail-on " + run.FailOn + ")", Classname: "cbprobe." + run.Experiment,
			Failure: &junitFailure{Message: msg, Type: "finding-" + f.Severity, Text: text}})
	}
	for i := range run.Arms {
		a := &run.Arms[i]
		if lines := observationLines(a); len(lines) > 0 {
			suite.Tests++
			suite.Errors++
			msg := strings.Join(lines, "; ")
			suite.Cases = append(suite.Cases, junitCase{Name: "evidence of arm " + a.Name, Classname: "cbprobe." + run.Experiment + "." + a.Name,
				Error: &junitFailure{Message: msg, Type: "inconclusive", Text: msg}})
		}
	}
	doc := junitSuites{Name: "cbprobe", Tests: suite.Tests, Failures: suite.Failures, Errors: suite.Errors, Suites: []junitSuite{suite}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
