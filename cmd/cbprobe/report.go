package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cbprobe/cbprobe/results"
	"github.com/spf13/cobra"
)

// reportOptions are the flags of `cbprobe report`.
type reportOptions struct {
	html    bool
	htmlOut string
	json    bool
}

func newReportCommand(g *globalOptions) *cobra.Command {
	o := &reportOptions{}
	cmd := &cobra.Command{
		Use:   "report RUN_DIR [RUN_DIR2]",
		Short: "Print a recorded run again, or two runs side by side",
		Long: `report reads a run directory written by cbprobe (complete or partial: an
interrupted run is read up to its last whole line) and prints its summary. With two
directories it prints them side by side: per arm and phase the outcome shares, the
first OPEN and first rejected request and the cause of the first OPEN.

--html with one directory rewrites its report.html from its files (for example
after upgrading cbprobe). With two directories it writes one page setting both
runs side by side instead (their verdicts, a table of what differs, and each arm
pair's tables and charts in two columns on one time view), to --html-out or to
A-vs-B.html in the current directory; the run directories are left as they are.
--json prints run.json (two runs: a JSON array).`,
		Example: `  cbprobe report cbprobe-results/attack-20261129T211626Z
  cbprobe report runs/count-based runs/time-based
  cbprobe report --html cbprobe-results/retry-20261129T211626Z
  cbprobe report --html runs/count-based runs/time-based --html-out compare.html`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(g, o, args)
		},
	}
	cmd.Flags().BoolVar(&o.html, "html", false, "rewrite report.html (one run), or write a side-by-side HTML comparison (two runs)")
	cmd.Flags().StringVar(&o.htmlOut, "html-out", "", "with --html and two runs: the comparison file (default A-vs-B.html in the current directory)")
	cmd.Flags().BoolVar(&o.json, "json", false, "print run.json instead of the summary")
	cmd.AddCommand(newReportMergeCommand(g))
	return cmd
}

func runReport(g *globalOptions, o *reportOptions, dirs []string) error {
	recs := make([]*results.Record, len(dirs))
	for i, d := range dirs {
		rec, err := results.Load(d)
		if err != nil {
			return err
		}
		for _, w := range rec.Warnings {
			fmt.Fprintf(g.stderr, "cbprobe: %s: %s\n", d, w)
		}
		recs[i] = rec
	}
	if o.htmlOut != "" && (!o.html || len(recs) != 2) {
		return usageErr(fmt.Errorf("--html-out needs --html and two run directories"))
	}
	switch {
	case o.html && len(recs) == 1:
		if err := results.WriteHTMLFile(recs[0]); err != nil {
			return err
		}
		fmt.Fprintf(g.stderr, "wrote %s\n", filepath.Join(recs[0].Dir, results.HTMLFile))
	case o.html:
		path := o.htmlOut
		if path == "" {
			path = comparisonName(recs[0].Dir, recs[1].Dir)
		}
		if err := writeComparisonHTML(path, recs[0], recs[1]); err != nil {
			return err
		}
		fmt.Fprintf(g.stderr, "wrote %s\n", path)
	}
	opt := results.TextOptions{Color: g.colorEnabled(g.stdout)}
	var err error
	switch {
	case o.json && len(recs) == 1:
		err = results.EncodeRun(g.stdout, &recs[0].Run)
	case o.json:
		enc := json.NewEncoder(g.stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode([]*results.Run{&recs[0].Run, &recs[1].Run})
	case len(recs) == 1:
		err = results.WriteText(g.stdout, &recs[0].Run, opt)
	default:
		err = results.WriteComparison(g.stdout, &recs[0].Run, &recs[1].Run, filepath.Base(recs[0].Dir), filepath.Base(recs[1].Dir), opt)
	}
	if err != nil {
		// Not a usage error: stdout could not be written (a closed pipe, a full disk).
		return infraErr(fmt.Errorf("write report to stdout: %w", err))
	}
	return nil
}

// comparisonName is the default file of `report A B --html`: "A-vs-B.html"
// from the directories' base names.
func comparisonName(a, b string) string {
	return runLabel(a) + "-vs-" + runLabel(b) + ".html"
}

// runLabel names a run directory by its base name.
func runLabel(dir string) string {
	return filepath.Base(filepath.Clean(dir))
}

// writeComparisonHTML writes the side-by-side page of a and b to path
// (through a temporary file in the same directory and a rename).
func writeComparisonHTML(path string, a, b *results.Record) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return infraErr(fmt.Errorf("write comparison %s: %w", path, err))
	}
	defer os.Remove(f.Name())
	err = results.WriteHTMLComparison(f, a, b, runLabel(a.Dir), runLabel(b.Dir))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return infraErr(fmt.Errorf("write comparison %s: %w", path, err))
	}
	return nil
}
