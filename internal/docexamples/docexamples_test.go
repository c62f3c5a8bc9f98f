package docexamples

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []string
	}{
		{"plain", "predict --sequential 40", []string{"predict", "--sequential", "40"}},
		{"single quotes", "attack --phases '15/s:5s, 0/s:15s'", []string{"attack", "--phases", "15/s:5s, 0/s:15s"}},
		{"double quotes with escapes", `run --expect "a \"b\" c\\"`, []string{"run", "--expect", `a "b" c\`}},
		{"quotes inside a word", `--expect='opens>=1'x`, []string{"--expect=opens>=1x"}},
		{"backslash outside quotes", `a\ b c`, []string{"a b", "c"}},
		{"empty", "  ", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Split(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Split(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	for _, bad := range []string{"a 'b", `a "b`} {
		if _, err := Split(bad); err == nil {
			t.Errorf("Split(%q): no error for an unclosed quote", bad)
		}
	}
}

func TestParseAndRewrite(t *testing.T) {
	src := "# Title\n\n<!-- example: predict --retry 3 -->\n<!-- example[head=2 exit dir=docs/x timing]: lint 'a b.yml' -->\n```\nold\nbody\n```\ntext\n<!-- example[match=^PHASE]: predict -->\n```\n```\nend\n"
	d, err := Parse("f.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Examples) != 2 {
		t.Fatalf("%d examples, want 2", len(d.Examples))
	}
	ex := d.Examples[0]
	if ex.Line != 3 || len(ex.Commands) != 2 || ex.Body != "old\nbody\n" || !ex.Timing {
		t.Errorf("first example = line %d, %d commands, body %q, timing %v; want line 3, 2 commands, old body, timing", ex.Line, len(ex.Commands), ex.Body, ex.Timing)
	}
	c := ex.Commands[1]
	if !slices.Equal(c.Args, []string{"lint", "a b.yml"}) || c.Opts.Head != 2 || !c.Opts.Exit || c.Opts.Dir != "docs/x" {
		t.Errorf("second command = %q %+v", c.Args, c.Opts)
	}
	if got, want := c.Heading(), `$ cbprobe lint 'a b.yml'; echo "exit $?"    # excerpt`; got != want {
		t.Errorf("Heading() = %q, want %q", got, want)
	}
	if d.Examples[1].Body != "" || d.Examples[1].Commands[0].Opts.Match == nil {
		t.Errorf("second example = %+v", d.Examples[1])
	}
	got := string(d.Rewrite([]string{"new\n", "x\ny\n"}))
	want := "# Title\n\n<!-- example: predict --retry 3 -->\n<!-- example[head=2 exit dir=docs/x timing]: lint 'a b.yml' -->\n```\nnew\n```\ntext\n<!-- example[match=^PHASE]: predict -->\n```\nx\ny\n```\nend\n"
	if got != want {
		t.Errorf("Rewrite =\n%s\nwant\n%s", got, want)
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, src, want string
	}{
		{"no block", "<!-- example: predict -->\ntext\n", "must be followed by a fenced block"},
		{"unclosed block", "<!-- example: predict -->\n```\nx\n", "not closed"},
		{"unknown option", "<!-- example[tail=3]: predict -->\n```\n```\n", "unknown option"},
		{"bad head", "<!-- example[head=x]: predict -->\n```\n```\n", "head="},
		{"no command", "<!-- example: -->\n```\n```\n", "no command"},
		{"no colon", "<!-- example predict -->\n```\n```\n", "colon"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("f.md", []byte(tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "f.md:") {
				t.Errorf("Parse error = %v, want one naming f.md and containing %q", err, tc.want)
			}
		})
	}
}

func TestExcerpt(t *testing.T) {
	out := "A 1\na 2\n\nB 3\nb 4\n\nC 5\nc 6\n"
	cases := []struct {
		name string
		opts Options
		want string
	}{
		{"none", Options{}, out},
		{"adds a final newline", Options{Head: 0}, out},
		{"head", Options{Head: 2}, "A 1\na 2\n...\n"},
		{"match", Options{Match: regexp.MustCompile(`^[a-z]`)}, "...\na 2\n...\nb 4\n...\nc 6\n"},
		{"blocks", Options{Blocks: regexp.MustCompile(`^[AC]`)}, "A 1\na 2\n...\nC 5\nc 6\n"},
		{"blocks then head", Options{Blocks: regexp.MustCompile(`^B`), Head: 1}, "...\nB 3\n...\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Excerpt(out, tc.opts); got != tc.want {
				t.Errorf("Excerpt =\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
	if got := Excerpt("x", Options{}); got != "x\n" {
		t.Errorf("Excerpt(%q) = %q, want a final newline", "x", got)
	}
}

func TestShape(t *testing.T) {
	a := "$ cbprobe experiment retry --speed 20\ncbprobe retry  complete  1.4s\n\narm retry-3  breaker X\n  phase  rate  planned\n  sequential  40  40  11 (27.5%)\n  +0.6s CLOSED → OPEN\nRun directory: cbprobe-results/retry-20261201T131500Z\nexit 1\n"
	b := "$ cbprobe experiment retry --speed 20\ncbprobe retry  complete  2.01s\narm retry-3  breaker X\n  phase  rate   planned\n  sequential  40  38  9 (23.5%)\n  +1.6s CLOSED → OPEN\n  +11.6s OPEN → HALF_OPEN\nRun directory: cbprobe-results/retry-20261201T140000Z\nexit 1\n"
	if Shape(a) != Shape(b) {
		t.Errorf("runs differing only in numbers and rows have different shapes:\n%s\n---\n%s", Shape(a), Shape(b))
	}
	inconclusive := strings.Replace(a, "complete  1.4s", "inconclusive (the run finished, but cbprobe could not observe enough to decide)  9.4s", 1) +
		"cbprobe: inconclusive: arm retry-3: breaker never observed\ncbprobe: fix: set --breaker\n"
	if Shape(a) != Shape(inconclusive) {
		t.Errorf("a run made inconclusive by the load has another shape:\n%s---\n%s", Shape(a), Shape(inconclusive))
	}
	if row := strings.Replace(a, "  +0.6s", "  phase 1 (x) success share: 20% inconclusive\n  +0.6s", 1); Shape(a) != Shape(row) {
		t.Errorf("an indented row that starts with \"phase\" and holds numbers is not a table header:\n%s", Shape(row))
	}
	cases := []struct{ name, other string }{
		{"a heading gone", strings.Replace(a, "arm retry-3", "  arm retry-3", 1)},
		{"a table column renamed", strings.Replace(a, "planned", "intended", 1)},
		{"another exit code", strings.Replace(a, "exit 1", "exit 0", 1)},
		{"a word changed", strings.Replace(a, "breaker X", "breaker Y", 1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if Shape(a) == Shape(tc.other) {
				t.Errorf("Shape does not see the change:\n%s", Shape(tc.other))
			}
		})
	}
}

func TestParseUnmarked(t *testing.T) {
	src := "```\n$ cbprobe lint a.yml\nout\n```\n<!-- example-exempt: needs a JDK -->\n```\n$ cbprobe experiment run x.yaml\n```\n```yaml\nname: x\n```\n<!-- example[timing test-args='--speed 10']: experiment retry -->\n```\n$ cbprobe experiment retry\n```\n"
	d, err := Parse("f.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Unmarked, []int{1}) {
		t.Errorf("Unmarked = %v, want [1]: the exempt block and the yaml block are not unmarked examples", d.Unmarked)
	}
	if len(d.Examples) != 1 || !slices.Equal(d.Examples[0].Commands[0].Opts.TestArgs, []string{"--speed", "10"}) {
		t.Errorf("examples = %+v, want one with test-args --speed 10", d.Examples)
	}
}

func TestShapeIgnoresLoadWarnings(t *testing.T) {
	a := "arm x\n  phase rate\nRun directory: d\n"
	b := "arm x\n  phase rate\nwarning: arm x: the load generator fell behind: 0 of 115 planned requests were dropped\nRun directory: d\n"
	if Shape(a) != Shape(b) {
		t.Errorf("a load warning changes the shape:\n%s---\n%s", Shape(a), Shape(b))
	}
}

func TestRenderOptions(t *testing.T) {
	d, err := Parse("f.md", []byte("<!-- example[hide demo]: attack --out r -->\n<!-- example[interrupt=3s exit head=1]: attack --out r -->\n```\n```\n"))
	if err != nil {
		t.Fatal(err)
	}
	ex := d.Examples[0]
	if !ex.Demo {
		t.Error("Demo not set by a demo command")
	}
	if got := ex.Commands[0].Render("out\n", 0); got != "" {
		t.Errorf("a hidden command renders %q, want nothing", got)
	}
	want := "$ cbprobe attack --out r; echo \"exit $?\"    # Ctrl-C after 3s; excerpt\na\n...\nexit 130\n"
	if got := ex.Commands[1].Render("a\nb\n", 130); got != want {
		t.Errorf("Render = %q, want %q", got, want)
	}
}

func TestParseFile(t *testing.T) {
	d, err := Parse("f.md", []byte("<!-- example-file: flow.yaml -->\n```yaml\nname: x\n```\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Examples) != 1 || d.Examples[0].File != "flow.yaml" || d.Examples[0].Body != "name: x\n" || len(d.Examples[0].Commands) != 0 {
		t.Fatalf("examples = %+v, want one showing flow.yaml", d.Examples)
	}
	if got := string(d.Rewrite([]string{"name: y\n"})); got != "<!-- example-file: flow.yaml -->\n```yaml\nname: y\n```\n" {
		t.Errorf("Rewrite = %q", got)
	}
	if _, err := Parse("f.md", []byte("<!-- example-file: flow.yaml -->\ntext\n")); err == nil {
		t.Error("an example-file marker without a block is not an error")
	}
}
