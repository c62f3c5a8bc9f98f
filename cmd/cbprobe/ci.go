package main

import (
	"fmt"
	"io"
	"os"

	"github.com/cbprobe/cbprobe/results"
)

// Environment variables the CI outputs read (GitHub Actions sets both).
const (
	// envGitHubActions is "true" inside a GitHub Actions job: cbprobe then
	// writes workflow annotations (::error, ::warning, ::notice).
	envGitHubActions = "GITHUB_ACTIONS"
	// envStepSummary is the file whose Markdown GitHub Actions shows as the
	// job summary: cbprobe appends the run's summary.md to it.
	envStepSummary = "GITHUB_STEP_SUMMARY"
)

// failOnUsage is the help text of --fail-on.
const failOnUsage = "findings of this severity or worse fail the run (exit 1, verdict failed): warning, error or none"

// reportToCI writes what a CI job shows of a finished (or stopped) run: with
// GITHUB_ACTIONS=true one workflow annotation a failed expectation, an
// inconclusive one and a finding (on w); with GITHUB_STEP_SUMMARY set, the
// run's summary.md appended to that file. A CI output that cannot be written
// is a warning on stderr: it never changes the run's verdict or exit code.
func reportToCI(g *globalOptions, w io.Writer, run *results.Run, dir string) {
	if run == nil {
		return
	}
	if os.Getenv(envGitHubActions) == "true" {
		if err := results.WriteAnnotations(w, run); err != nil {
			fmt.Fprintf(g.stderr, "cbprobe: warning: write GitHub annotations: %v\n", err)
		}
	}
	if p := os.Getenv(envStepSummary); p != "" {
		if err := results.AppendStepSummary(p, dir, run); err != nil {
			fmt.Fprintf(g.stderr, "cbprobe: warning: %v\n", err)
		}
	}
}

// ciWriter is where annotations go: stdout, where GitHub Actions documents
// them, unless stdout carries JSON (--json); then stderr, which the runner
// reads for workflow commands too.
func ciWriter(g *globalOptions, jsonOut bool) io.Writer {
	if jsonOut {
		return g.stderr
	}
	return g.stdout
}
