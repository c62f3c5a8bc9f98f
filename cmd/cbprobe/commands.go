package main

import "github.com/spf13/cobra"

// commandConstructors lists every subcommand. Each file adds its constructor here.
func commandConstructors() []func(*globalOptions) *cobra.Command {
	return []func(*globalOptions) *cobra.Command{
		newExperimentCommand,
		newBreakerCommand,
		newDemoCommand,
		newPredictCommand,
		newAttackCommand,
		newReportCommand,
		newWatchCommand,
		newLintCommand,
		newPgsimCommand,
		newFaultCommand,
		newVersionCommand}
}
