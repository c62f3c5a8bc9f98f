package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
)

// version is the release version, set only by a release build with
// -ldflags "-X main.version=..." (see .goreleaser.yaml); other builds take the
// module version and commit from the binary's build information (version.go).
var version = ""

// globalOptions are the flags every command shares.
type globalOptions struct {
	color   string
	verbose bool
	stdout  io.Writer
	stderr  io.Writer
	logger  *slog.Logger
}

// colorEnabled reports whether coloured output should be written to w.
func (g *globalOptions) colorEnabled(w io.Writer) bool {
	switch g.color {
	case "always":
		return true
	case "never":
		return false
	}
	if _, ok := os.LookupEnv("NO_COLOR"); ok {
		return false
	}
	return isTerminal(w)
}

// isTerminal reports whether w is an interactive terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	g := &globalOptions{stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:   "cbprobe",
		Short: "Prove that a circuit breaker behaves as configured",
		Long: `cbprobe drives a service at fixed rates, polls its Resilience4j circuit breaker
metrics at the same time, labels every OPEN transition by its cause (failure rate,
slow-call rate, both) and compares the result with what Resilience4j's rules predict.

Exit codes: 0 expectations met, 1 an expectation failed, 2 usage or configuration
error, 3 target or metrics unreachable, 130 interrupted (partial results kept).`,
		Example:       "  cbprobe experiment retry\n  cbprobe pgsim --seed 1\n  cbprobe predict --sequential 40 --retry 3",
		Version:       currentBuildInfo().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			switch g.color {
			case "auto", "always", "never":
			default:
				return usageErr(fmt.Errorf("--color: %q is not one of auto, always, never", g.color))
			}
			level := slog.LevelWarn
			if g.verbose {
				level = slog.LevelDebug
			}
			g.logger = slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: level}))
			return nil
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr(err) })
	root.PersistentFlags().StringVar(&g.color, "color", "auto", "colour output: auto, always or never (NO_COLOR is honoured)")
	root.PersistentFlags().BoolVarP(&g.verbose, "verbose", "v", false, "write debug logs to stderr")
	for _, add := range commandConstructors() {
		root.AddCommand(add(g))
	}
	return root
}
