package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra/doc"
)

var updateCLIDocs = flag.Bool("update-cli-docs", false, "rewrite docs/reference/cli from the cobra commands")

// cliDocDir is where the generated command reference lives.
const cliDocDir = "../../docs/reference/cli"

// TestCLIReferenceUpToDate generates the command reference from the cobra
// commands and fails when docs/reference/cli differs: every flag and example in
// the docs is the one the binary has. `make docs` rewrites it.
func TestCLIReferenceUpToDate(t *testing.T) {
	root := newRootCommand(io.Discard, io.Discard)
	root.DisableAutoGenTag = true
	for _, c := range root.Commands() {
		c.DisableAutoGenTag = true
	}
	dir := t.TempDir()
	link := func(name string) string { return name }
	if err := doc.GenMarkdownTreeCustom(root, dir, func(string) string { return "" }, link); err != nil {
		t.Fatal(err)
	}
	got := readTree(t, dir)
	if *updateCLIDocs {
		if err := os.RemoveAll(cliDocDir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(cliDocDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, data := range got {
			if err := os.WriteFile(filepath.Join(cliDocDir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	want := readTree(t, cliDocDir)
	var stale []string
	for name, data := range got {
		if !bytes.Equal(want[name], data) {
			stale = append(stale, name)
		}
	}
	for name := range want {
		if _, ok := got[name]; !ok {
			stale = append(stale, name+" (no such command any more)")
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		t.Errorf("docs/reference/cli is out of date for %s; run `make docs`", strings.Join(stale, ", "))
	}
}

func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".md") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = data
	}
	return out
}
