package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/cbprobe/cbprobe/results"
	"github.com/spf13/cobra"
)

// reportOptions are the flags of `cbprobe report`.
type reportOptions struct {
	html bool
	json bool
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

--html rewrites report.html in each directory from its files (for example after
upgrading cbprobe); --json prints run.json (two runs: a JSON array).`,
		Example: `  cbprobe report cbprobe-results/attack-20261129T211626Z
  cbprobe report runs/count-based runs/time-based
  cbprobe report --html cbprobe-results/retry-20261129T211626Z`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(g, o, args)
		},
	}
	cmd.Flags().BoolVar(&o.html, "html", false, "rewrite report.html in each run directory")
	cmd.Flags().BoolVar(&o.json, "json", false, "print run.json instead of the summary")
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
	if o.html {
		for _, rec := range recs {
			if err := results.WriteHTMLFile(rec); err != nil {
				return err
			}
			fmt.Fprintf(g.stderr, "wrote %s\n", filepath.Join(rec.Dir, results.HTMLFile))
		}
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
