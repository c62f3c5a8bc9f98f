package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cbprobe/cbprobe/demo"
	"github.com/cbprobe/cbprobe/internal/docexamples"
)

var (
	updateDocExamples = flag.Bool("update-doc-examples", false, "rewrite the marked example blocks of README.md and docs/ that are stale")
	rerunDocExamples  = flag.Bool("rerun-doc-examples", false, "with -update-doc-examples, rewrite every timing example from a fresh run, not only those whose shape changed")
)

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
//   - a timing example (experiment runs, attack, watch; marked timing) is
//     run with its test-args (e.g. --speed 20, so the check takes seconds)
//     and must match by its command lines and docexamples.Shape: the
//     unindented lines and table headers with every number masked, so a
//     heading, column or exit code that changed is seen, while the rows that
//     vary with the machine's load are not compared, nor is the verdict
//     (an expectation failed, exit 1, or a run made inconclusive, exit 3,
//     by a loaded machine). `make docs` runs it as
//     shown and rewrites it only when its shape changed, so a rerun leaves
//     no diff.
//
// A block marked example-file must hold that file of docs/testdata.
// A `$ cbprobe` block without a marker fails too, unless an exemption
// (<!-- example-exempt: REASON -->) says why it cannot be generated.
//
// Either way a stale block fails with "run `make docs`", which rewrites the
// stale blocks (-update-doc-examples; with -rerun-doc-examples every timing
// block too).
func TestDocExamples(t *testing.T) {
	repo, err := filepath.Abs(repoRoot) // examples change the working directory
	if err != nil {
		t.Fatal(err)
	}
	files := docMarkdownFiles(t, repo)
	total := 0
	// Outputs of plain commands (no demo, hide, background or interrupt)
	// by their arguments and directory: README.md and docs/guides show the
	// same experiment, which is run once.
	cache := map[string]docRun{}
	for _, file := range files {
		src, err := os.ReadFile(filepath.Join(repo, file))
		if err != nil {
			t.Fatalf("read %s: %v", file, err)
		}
		doc, err := docexamples.Parse(file, src)
		if err != nil {
			t.Fatalf("parse examples: %v", err)
		}
		for _, line := range doc.Unmarked {
			t.Errorf("%s:%d: a `$ cbprobe` block without a marker: generate it (<!-- example: ARGS --> on the line before its fence, then `make docs`) or say why not (<!-- example-exempt: REASON -->)", file, line)
		}
		if len(doc.Examples) == 0 {
			continue
		}
		bodies := make([]string, len(doc.Examples))
		ran := true
		for i, ex := range doc.Examples {
			total++
			bodies[i] = ex.Body // kept when -run leaves the example out
			ran = t.Run(strings.ReplaceAll(file, "/", "_")+":"+strconv.Itoa(ex.Line), func(t *testing.T) {
				if ex.File != "" {
					data, err := os.ReadFile(filepath.Join(repo, defaultExampleDir, ex.File))
					if err != nil {
						t.Fatalf("%s:%d: the example shows %s: %v", file, ex.Line, ex.File, err)
					}
					bodies[i] = string(data)
					if bodies[i] != ex.Body && !*updateDocExamples {
						t.Errorf("%s:%d: the block differs from %s/%s; run `make docs`", file, ex.Line, defaultExampleDir, ex.File)
					}
					return
				}
				bodies[i] = renderExample(t, repo, file, ex, cache)
				if !exampleStale(ex, bodies[i]) && !(*updateDocExamples && *rerunDocExamples) {
					bodies[i] = ex.Body // a timing example keeps its numbers while its shape holds
					return
				}
				if !*updateDocExamples {
					what := "the example differs from"
					if ex.Timing {
						what = fmt.Sprintf("the example's shape (%s) differs from that of", firstDiff(docexamples.Shape(ex.Body), docexamples.Shape(bodies[i])))
					}
					t.Errorf("%s:%d: %s what `cbprobe %s` prints now; run `make docs`\n--- in the docs:\n%s--- printed now:\n%s",
						file, ex.Line, what, ex.Commands[0].Shown, ex.Body, bodies[i])
				}
			}) && ran
		}
		if *updateDocExamples && ran {
			if err := os.WriteFile(filepath.Join(repo, file), doc.Rewrite(bodies), 0o644); err != nil {
				t.Fatalf("write %s: %v", file, err)
			}
		}
	}
	if total < 30 {
		t.Errorf("found %d marked examples in %d Markdown files; the docs hold more (is the marker spelt <!-- example: ARGS -->?)", total, len(files))
	}
}

// renderExample runs an example's commands, as TestDocExamples describes,
// and returns the block's text; a command's output is taken from cache when
// the same plain command already ran.
func renderExample(t *testing.T, repo, file string, ex docexamples.Example, cache map[string]docRun) string {
	t.Helper()
	var body strings.Builder
	work := exampleWorkDir(t, repo, ex)
	t.Chdir(work)
	demoAddr := ""
	if ex.Demo {
		// Checking, the demo runs 10 times faster (with the timing
		// example's test-args), so the check takes seconds.
		speed := 1.0
		if ex.Timing && !*updateDocExamples {
			speed = 10
		}
		demoAddr = startDocDemo(t, speed)
	}
	var background sync.WaitGroup
	defer background.Wait()
	for _, c := range ex.Commands {
		args := c.Args
		if ex.Timing && !*updateDocExamples {
			args = append(append([]string{}, args...), c.Opts.TestArgs...)
		}
		if c.Opts.Background {
			background.Go(func() { runDocExample(demoAddr, c, args) })
			continue
		}
		key := c.Opts.Dir + "\x00" + strings.Join(args, "\x00")
		plain := !c.Opts.Demo && !c.Opts.Hide && c.Opts.Interrupt == 0
		run, ok := cache[key]
		if !ok || !plain {
			run.out, run.code = runDocExample(demoAddr, c, args)
			if plain {
				cache[key] = run
			}
		}
		out, code := run.out, run.code
		// A timing example's verdict depends on the machine's load: when
		// checking, a run whose expectation failed (exit 1) or that a
		// loaded machine made inconclusive (exit 3) still has its shape.
		loadDependent := ex.Timing && !*updateDocExamples && (code == exitExpectation || code == exitInfrastructure)
		interrupted := c.Opts.Interrupt > 0 && code == exitInterrupted
		if code != exitOK && !c.Opts.Exit && !loadDependent && !interrupted {
			t.Fatalf("%s:%d: `cbprobe %s` exited %d (mark it [exit] to show the code):\n%s", file, ex.Line, c.Shown, code, out)
		}
		body.WriteString(c.Render(out, code))
	}
	return body.String()
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

// firstDiff describes the first line where two texts differ.
func firstDiff(was, now string) string {
	a, b := strings.Split(was, "\n"), strings.Split(now, "\n")
	for i := 0; i < len(a) || i < len(b); i++ {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return fmt.Sprintf("line %d: %q in the docs, %q now", i+1, x, y)
		}
	}
	return "same shape, other command lines"
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

// docRun is what a command printed and its exit code.
type docRun struct {
	out  string
	code int
}

// docDemoAddr is the address an example's arguments name for the reference
// service (cbprobe demo's default); startDocDemo's real address replaces it.
const docDemoAddr = "127.0.0.1:8080"

// exampleWorkDir is the working directory of an example's commands: a copy of
// its dir= (default docs/testdata), beside links to the repository's top-level
// folders, so that an example can name examples/spring-commerce/... or
// breaker/conformance/... as a reader in a clone would.
func exampleWorkDir(t *testing.T, repo string, ex docexamples.Example) string {
	t.Helper()
	src := defaultExampleDir
	for _, c := range ex.Commands {
		if c.Opts.Dir != "" {
			src = c.Opts.Dir
		}
	}
	work := t.TempDir()
	if err := os.CopyFS(work, os.DirFS(filepath.Join(repo, src))); err != nil {
		t.Fatalf("copy %s for the example at line %d: %v", src, ex.Line, err)
	}
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
	return work
}

// startDocDemo starts the reference service as `cbprobe demo --seed 1 --speed
// speed` does, on a free loopback port, for the rest of the test, and returns
// its address.
func startDocDemo(t *testing.T, speed float64) string {
	t.Helper()
	svc, err := demo.New(demo.Config{Seed: 1, Speed: speed, EmbeddedGateway: true}, nil)
	if err != nil {
		t.Fatalf("demo.New: %v", err)
	}
	if err := svc.Start(context.Background(), "127.0.0.1:0"); err != nil {
		t.Fatalf("demo start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := svc.Close(ctx); err != nil {
			t.Errorf("demo close: %v", err)
		}
	})
	return strings.TrimPrefix(svc.URL(), "http://")
}

// runDocExample runs `cbprobe args --color never` (c's arguments, with its
// test-args when checking) in the working directory, against the demo at
// demoAddr when c is marked demo, and returns what it wrote to stdout and stderr, in the order
// written, with an error line as main prints it, and its exit code.
func runDocExample(demoAddr string, c docexamples.Command, args []string) (string, int) {
	if c.Opts.Demo {
		args = slices.Clone(args)
		for i := range args {
			args[i] = strings.ReplaceAll(args[i], docDemoAddr, demoAddr)
		}
	}
	var out lockedBuffer
	root := newRootCommand(&out, &out)
	root.SetArgs(append(slices.Clone(args), "--color", "never"))
	ctx := context.Background()
	if c.Opts.Interrupt > 0 { // cancelled as main's first Ctrl-C cancels it
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		stop := time.AfterFunc(c.Opts.Interrupt, cancel)
		defer stop.Stop()
		defer cancel()
	}
	err := root.ExecuteContext(ctx)
	if err != nil && !isSilent(err) {
		out.WriteString("cbprobe: " + err.Error() + "\n")
	}
	text := out.String()
	if c.Opts.Demo {
		text = strings.ReplaceAll(text, demoAddr, docDemoAddr)
	}
	return text, exitCode(ctx, err)
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
