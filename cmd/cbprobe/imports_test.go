package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// importRule is the import rule of docs/development.md ("Imports"): for each
// library package, the cbprobe packages it may import. A package not listed may
// import none. Change both together.
func importRule() map[string][]string {
	return map[string][]string{
		"breaker/conformance": {"breaker", "springconf"},
		"collect":             {"breaker"}, // the state names and the cause vocabulary
		"demo":                {"breaker", "pgsim", "springconf"},
		"fault":               {"pgsim", "pgsim/behavior"},
		"pgsim":               {"pgsim/behavior"},
		"runner":              {"attack", "breaker", "collect", "results"},
		"service":             {"results"},
		"sim":                 {"attack", "breaker", "pgsim/behavior", "springconf"},
		"springconf":          {"breaker"},
		"experiments": {"attack", "breaker", "collect", "demo", "fault", "pgsim", "pgsim/behavior", "results",
			"runner", "service", "sim", "springconf"},
	}
}

// TestImportRules lists every package's cbprobe imports with `go list` and fails
// on one the documented rule does not allow, so DESIGN and code cannot drift.
// cmd/cbprobe and the examples' test packages wire everything and are exempt.
func TestImportRules(t *testing.T) {
	const mod = "github.com/cbprobe/cbprobe/"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, mod+"...").Output()
	if err != nil {
		t.Fatalf("go list (needs the go toolchain on PATH): %v", err)
	}
	allowedImports := importRule()
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], mod)
		if pkg == "cmd/cbprobe" || strings.HasPrefix(pkg, "examples/") {
			continue
		}
		checked++
		for _, imp := range fields[1:] {
			dep, ok := strings.CutPrefix(imp, mod)
			if !ok {
				continue
			}
			if !slices.Contains(allowedImports[pkg], dep) {
				t.Errorf("%s imports %s, which the import rule (docs/development.md) does not allow", pkg, dep)
			}
		}
	}
	if checked < 10 {
		t.Errorf("checked %d packages; go list printed:\n%s", checked, out)
	}
}
