package main

import (
	"bytes"
	"context"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/cbprobe/cbprobe/internal/docexamples"
)

var updateDocExamples = flag.Bool("update-doc-examples", false, "rewrite the marked example blocks of README.md and docs/ from the commands' output")

// repoRoot is the repository root, relative to this package's directory.
const repoRoot = "../.."

// defaultExampleDir is the working directory (a copy of it) of an example
// without a dir= option: it holds the files the examples name.
const defaultExampleDir = "docs/testdata"

// TestDocExamples runs every marked example of README.md and docs/**/*.md
// (see package internal/docexamples for the marker) through the cobra root
// command, in-process with --color never, in a temporary copy of its dir=, and
// compares the block with what the command prints now:
//
//   - a deterministic example (predict, lint, breaker replay, experiment show,
//     usage errors) must match byte for byte;
//   - a timing example (experiment runs, attack, watch; marked timing, run at
//     --speed 20 where it takes long) must match by docexamples.Shape: the
//     unindented lines and table headers with every number masked, so a
//     heading, column or exit code that changed is seen, while the rows that
//     vary with the machine's load are not compared.
//
// Either way a stale block fails with "run `make docs`", which rewrites every
// block (-update-doc-examples).
func TestDocExamples(t *testing.T) {
	repo, err := filepath.Abs(repoRoot) // examples change the working directory
	if err != nil {
		t.Fatal(err)
	}
	files := docMarkdownFiles(t, repo)
	total := 0
	for _, file := range files {
		src, err := os.ReadFile(filepath.Join(repo, file))
		if err != nil {
			t.Fatalf("read %s: %v", file, err)
		}
		doc, err := docexamples.Parse(file, src)
		if err != nil {
			t.Fatalf("parse examples: %v", err)
		}
		if len(doc.Examples) == 0 {
			continue
		}
		bodies := make([]string, len(doc.Examples))
		for i, ex := range doc.Examples {
			total++
			t.Run(strings.ReplaceAll(file, "/", "_")+":"+strconv.Itoa(ex.Line), func(t *testing.T) {
				var body strings.Builder
				for _, c := range ex.Commands {
					out, code := runDocExample(t, repo, c)
					if code != 0 && !c.Opts.Exit {
						t.Fatalf("%s:%d: `cbprobe %s` exited %d (mark it [exit] to show the code):\n%s", file, ex.Line, c.Shown, code, out)
					}
					body.WriteString(c.Render(out, code))
				}
				bodies[i] = body.String()
				if !exampleStale(ex, bodies[i]) {
					bodies[i] = ex.Body // a timing example keeps its numbers while its shape holds
					return
				}
				if !*updateDocExamples {
					t.Errorf("%s:%d: the example differs from what `cbprobe %s` prints now; run `make docs`\n--- in the docs:\n%s--- printed now:\n%s",
						file, ex.Line, ex.Commands[0].Shown, ex.Body, bodies[i])
				}
			})
		}
		if *updateDocExamples && !t.Failed() {
			if err := os.WriteFile(filepath.Join(repo, file), doc.Rewrite(bodies), 0o644); err != nil {
				t.Fatalf("write %s: %v", file, err)
			}
		}
	}
	if total < 10 {
		t.Errorf("found %d marked examples in %d Markdown files; the docs hold more (is the marker spelt <!-- example: ARGS -->?)", total, len(files))
	}
}

// exampleStale reports whether a block differs from the output printed now:
// byte for byte for a deterministic example; for a timing one, by its command
// lines or its docexamples.Shape. `make docs` rewrites only stale blocks, so
// it leaves no diff when nothing changed (a timing block keeps its numbers).
func exampleStale(ex docexamples.Example, now string) bool {
	if !ex.Timing {
		return now != ex.Body
	}
	return docexamples.Shape(now) != docexamples.Shape(ex.Body) || commandLines(now) != commandLines(ex.Body)
}

// commandLines are the "$ cbprobe" lines of a block.
func commandLines(body string) string {
	var b strings.Builder
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "$ cbprobe ") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// docMarkdownFiles lists README.md and docs/**/*.md, relative to the
// repository root repo; the generated command reference is left out.
func docMarkdownFiles(t *testing.T, repo string) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(repo, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(repo, path)
		if err != nil {
			return err
		}
		if d.IsDir() && filepath.ToSlash(rel) == "docs/reference/cli" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("list docs: %v", err)
	}
	return files
}

// runDocExample runs `cbprobe ARGS --color never` in a temporary copy of the
// example's directory (beside links to the repository's top-level folders) and returns what it wrote to stdout and stderr, in the
// order written, with an error line as main prints it, and its exit code.
func runDocExample(t *testing.T, repo string, c docexamples.Command) (string, int) {
	t.Helper()
	src := c.Opts.Dir
	if src == "" {
		src = defaultExampleDir
	}
	work := t.TempDir()
	if err := os.CopyFS(work, os.DirFS(filepath.Join(repo, src))); err != nil {
		t.Fatalf("copy %s for `cbprobe %s`: %v", src, c.Shown, err)
	}
	// The repository's top-level folders, so that an example can name
	// examples/spring-commerce/... or breaker/conformance/... as a reader in a
	// clone would.
	top, err := os.ReadDir(repo)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range top {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if err := os.Symlink(filepath.Join(repo, e.Name()), filepath.Join(work, e.Name())); err != nil && !os.IsExist(err) {
			t.Fatalf("link %s/: %v", e.Name(), err)
		}
	}
	t.Chdir(work)
	var out lockedBuffer
	root := newRootCommand(&out, &out)
	root.SetArgs(append(append([]string{}, c.Args...), "--color", "never"))
	ctx := context.Background()
	err = root.ExecuteContext(ctx)
	if err != nil && !isSilent(err) {
		out.WriteString("cbprobe: " + err.Error() + "\n")
	}
	return out.String(), exitCode(ctx, err)
}

// lockedBuffer is a bytes.Buffer that stdout and stderr writers of several
// goroutines can share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) WriteString(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.WriteString(s)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
