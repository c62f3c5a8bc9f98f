package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/cbprobe/cbprobe/breaker/conformance"
	"github.com/spf13/cobra"
)

func newBreakerCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "breaker",
		Short: "Work with cbprobe's Resilience4j circuit breaker model",
		Long: `The breaker commands exercise cbprobe's re-implementation of Resilience4j's
CircuitBreaker, the model behind predict, lint and the demo service.`,
		Example: "  cbprobe breaker replay breaker/conformance/testdata/vectors   # in a clone of the repository",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	cmd.AddCommand(newBreakerReplayCommand(g))
	return cmd
}

func newBreakerReplayCommand(g *globalOptions) *cobra.Command {
	var explain string
	cmd := &cobra.Command{
		Use:   "replay PATH...",
		Short: "Replay conformance vectors recorded from the real Resilience4j through the model",
		Long: `replay runs every conformance vector (a JSON file, or every *.json file of a
folder) through cbprobe's breaker model on a virtual clock and compares each step
with what the real library did: permitted, state, events in order, the nine
counters and both rates (floats within 1e-4).

Besides circuit-breaker vectors (the public format, and cbprobe's own with
exponential, randomised and initial-state settings) it reads "kind": "retry"
vectors (attempts, waits, events, counters of cbprobe's Retry) and "kind":
"timelimiter" vectors (timeout against completion, cancellation, events); see
docs/conformance.md.

It prints one line per mismatch (file:line: step N (op): field: want W, got G),
then "N/M vectors match (S steps)".

--explain FILE prints the step table of one vector instead: time, op, state,
permitted, rates, counts and events, with mismatching steps marked "!".

Exit codes: 0 every vector matches, 1 a vector does not match (the model
misbehaved), 2 unreadable or malformed input.`,
		Example: `  # in a clone of the repository:
  cbprobe breaker replay breaker/conformance/testdata/vectors
  cbprobe breaker replay --explain breaker/conformance/testdata/vectors/initial-state-open.json
  # the public vectors, when the shared folder sits beside the clone:
  cbprobe breaker replay ../shared/conformance`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if explain != "" {
				if len(args) > 0 {
					return usageErr(errors.New("--explain takes one FILE and no other arguments"))
				}
				return runExplain(g, explain)
			}
			if len(args) == 0 {
				return usageErr(errors.New("replay needs at least one vector file or folder"))
			}
			return runReplay(cmd.Context(), g, args)
		},
	}
	cmd.Flags().StringVar(&explain, "explain", "", "print the step table of one vector `FILE`")
	return cmd
}

func runReplay(ctx context.Context, g *globalOptions, paths []string) error {
	files, err := conformance.Expand(paths)
	if err != nil {
		return usageErr(err)
	}
	// Load everything first: malformed input is exit 2 whatever else happens.
	vectors := make([]*conformance.Any, 0, len(files))
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		v, err := conformance.LoadAny(f)
		if err != nil {
			return usageErr(err)
		}
		vectors = append(vectors, v)
	}
	matched, steps := 0, 0
	for _, v := range vectors {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, err := conformance.RunAny(v)
		if err != nil {
			return usageErr(err)
		}
		steps += r.Steps
		if r.OK() {
			matched++
			continue
		}
		for _, m := range r.Mismatches {
			fmt.Fprintln(g.stdout, m.String())
		}
	}
	fmt.Fprintf(g.stdout, "%d/%d vectors match (%d steps)\n", matched, len(vectors), steps)
	if matched != len(vectors) {
		return silentErr(exitExpectation, fmt.Errorf("%d of %d vectors do not match", len(vectors)-matched, len(vectors)))
	}
	return nil
}

func runExplain(g *globalOptions, file string) error {
	v, err := conformance.LoadAny(file)
	if err != nil {
		return usageErr(err)
	}
	r, err := conformance.RunAny(v)
	if err != nil {
		return usageErr(err)
	}
	if r.Breaker != nil {
		err = conformance.WriteExplain(g.stdout, r.Breaker)
	} else {
		// Retry and time-limiter vectors have no state table: their mismatches and a summary.
		for _, m := range r.Mismatches {
			fmt.Fprintln(g.stdout, m.String())
		}
		_, err = fmt.Fprintf(g.stdout, "%s: %s vector, %d steps, %d mismatches\n", file, v.Kind(), r.Steps, len(r.Mismatches))
	}
	if err != nil {
		return infraErr(err)
	}
	if !r.OK() {
		return silentErr(exitExpectation, fmt.Errorf("%s: %d mismatches", file, len(r.Mismatches)))
	}
	return nil
}
