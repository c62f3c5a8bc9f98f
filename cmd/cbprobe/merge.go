package main

import (
	"errors"
	"fmt"

	"github.com/cbprobe/cbprobe/results"
	"github.com/spf13/cobra"
)

// mergeOptions are the flags of `cbprobe report merge`.
type mergeOptions struct {
	out   string
	html  bool
	quiet bool
	json  bool
}

func newReportMergeCommand(g *globalOptions) *cobra.Command {
	o := &mergeOptions{}
	cmd := &cobra.Command{
		Use:   "merge SHARD_DIR... --out DIR",
		Short: "Merge the run directories of the shards of one plan into one run",
		Long: `merge reads the run directories written by 'cbprobe attack --shard i/N' (or
'experiment --shard i/N'), one per shard, every index once, and writes one run to
--out as if a single process had sent the whole plan: requests ordered by intended
time and numbered in that order, samples and events of every shard with the
duplicates dropped (several shards polled the same service), per-phase counts
summed, the first OPEN and first rejected request recomputed, and the verdict.

Shards whose plans differ (a different phase list, flow, seed, target, shard
count or start time) or a missing or repeated shard are refused (exit 2) with
the difference named. requests.csv files are streamed (a k-way merge by intended
time): memory grows with one phase, not with the run. --html also writes
report.html, which reads every request into memory.`,
		Example: `  cbprobe report merge runs/shard-0 runs/shard-1 runs/shard-2 --out runs/merged
  cbprobe report merge /results/shard-* --out /results/merged --html`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return runMerge(g, o, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.out, "out", "", "merged run directory to create (required; never overwritten)")
	f.BoolVar(&o.html, "html", false, "also write report.html (reads every merged request into memory)")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "print nothing but errors")
	f.BoolVar(&o.json, "json", false, "print the merged run.json instead of the summary")
	return cmd
}

func runMerge(g *globalOptions, o *mergeOptions, dirs []string) error {
	if o.out == "" {
		return usageErr(errors.New("--out is required: the merged run directory to create"))
	}
	run, st, err := results.Merge(dirs, results.MergeOptions{Out: o.out, HTML: o.html})
	if err != nil {
		return err
	}
	g.logger.Debug("merged", "requests", st.Requests, "max_held", st.MaxHeld, "max_phase", st.MaxPhase, "latency_runs", st.LatencyRuns)
	switch {
	case o.json:
		if err := results.EncodeRun(g.stdout, run); err != nil {
			return infraErr(fmt.Errorf("write run.json to stdout: %w", err))
		}
	case o.quiet:
	default:
		if err := results.WriteText(g.stdout, run, results.TextOptions{Color: g.colorEnabled(g.stdout)}); err != nil {
			return infraErr(fmt.Errorf("write summary to stdout: %w", err))
		}
		fmt.Fprintf(g.stdout, "merged %d shards, %d requests: %s\n", len(dirs), st.Requests, o.out)
	}
	return verdictErr(run, o.out, g)
}
