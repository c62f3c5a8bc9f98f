package main

import (
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// buildInfo is what `cbprobe version` reports: where this binary came from.
type buildInfo struct {
	// Version is the release version (set by the release build through
	// -ldflags "-X main.version=..."), else the module version Go recorded
	// ("(devel)" for a build from a clone).
	Version string `json:"version"`
	// Module is the main module's path.
	Module string `json:"module"`
	// Commit is the VCS revision the binary was built from ("" when unknown,
	// e.g. built outside a Git work tree or with -buildvcs=false).
	Commit string `json:"commit"`
	// CommitTime is the commit's time in RFC 3339 ("" when unknown).
	CommitTime string `json:"commitTime,omitempty"`
	// Dirty is true when the work tree had uncommitted changes at build time.
	Dirty bool `json:"dirty"`
	// GoVersion is the Go toolchain that built the binary.
	GoVersion string `json:"goVersion"`
	// Platform is GOOS/GOARCH of the binary.
	Platform string `json:"platform"`
}

// readBuildInfo assembles the build information from the binary itself. release
// is the version stamped by a release build ("" for any other build).
func readBuildInfo(release string, bi *debug.BuildInfo, ok bool) buildInfo {
	out := buildInfo{Version: release}
	if !ok || bi == nil {
		if out.Version == "" {
			out.Version = "unknown"
		}
		return out
	}
	out.Module, out.GoVersion = bi.Main.Path, bi.GoVersion
	if out.Version == "" {
		out.Version = bi.Main.Version
	}
	var goos, goarch string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			out.Commit = s.Value
		case "vcs.time":
			out.CommitTime = s.Value
		case "vcs.modified":
			out.Dirty = s.Value == "true"
		case "GOOS":
			goos = s.Value
		case "GOARCH":
			goarch = s.Value
		}
	}
	if goos != "" {
		out.Platform = goos + "/" + goarch
	}
	return out
}

// String is the one-line form `cbprobe --version` prints.
func (b buildInfo) String() string {
	var sb strings.Builder
	sb.WriteString(b.Version)
	if b.Commit != "" {
		commit := b.Commit
		if len(commit) > 12 {
			commit = commit[:12]
		}
		sb.WriteString(" (commit " + commit)
		if b.Dirty {
			sb.WriteString(", dirty")
		}
		sb.WriteString(")")
	} else {
		sb.WriteString(" (commit unknown)")
	}
	if b.GoVersion != "" {
		sb.WriteString(" " + b.GoVersion)
	}
	if b.Platform != "" {
		sb.WriteString(" " + b.Platform)
	}
	return sb.String()
}

func currentBuildInfo() buildInfo {
	bi, ok := debug.ReadBuildInfo()
	return readBuildInfo(version, bi, ok)
}

func newVersionCommand(g *globalOptions) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print cbprobe's version, commit and Go version",
		Long: `version prints where this binary came from: the release version (or the Go
module version, "(devel)" for a build from a clone), the Git commit and whether the
work tree was dirty, the Go version and the platform. --json prints the same for scripts.`,
		Example: "  cbprobe version\n  cbprobe version --json | jq -r .commit",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := currentBuildInfo()
			if asJSON {
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(info); err != nil {
					return fmt.Errorf("write version: %w", err)
				}
				return nil
			}
			_, err := fmt.Fprintln(g.stdout, "cbprobe", info.String())
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the build information as JSON")
	return cmd
}
