// Package docexamples finds the generated example blocks of the Markdown
// documentation and rewrites them, so that no example output can go stale.
//
// An example is a fenced code block preceded by one or more marker lines:
//
//	<!-- example: predict --sequential 40 --retry 3 -->
//	<!-- example[head=12 exit]: lint bad.yml -->
//	```
//	$ cbprobe predict --sequential 40 --retry 3
//	...output...
//	```
//
// Each marker is one cbprobe command (its arguments written as in a POSIX
// shell, single and double quotes allowed); the block holds "$ cbprobe ARGS"
// followed by what the command printed (stdout and stderr as a terminal
// shows them, with --color never), for each marker in turn. Options, in
// brackets before the colon, separated by spaces:
//
//   - head=N keeps the first N lines of the output;
//   - match=REGEXP keeps the lines that match;
//   - blocks=REGEXP keeps the paragraphs (runs of non-blank lines) whose
//     first line matches;
//   - dir=PATH runs the example's commands in a copy of PATH (relative to
//     the repository; default docs/testdata), so the files they name are
//     there; all commands of an example share one working directory;
//   - exit shows the exit code: the command line gets `; echo "exit $?"`
//     and the output an "exit N" line; without it the command must exit 0;
//   - timing marks output that depends on timing (experiment runs, attack,
//     watch): it is compared by Shape, not byte for byte;
//   - demo runs the command while the reference service (cbprobe demo
//     --seed 1, embedded gateway) listens on a free port: 127.0.0.1:8080 in
//     the arguments is that address, and the address in the output is shown
//     as 127.0.0.1:8080; one service serves all of an example's commands;
//   - interrupt=DURATION cancels the command after DURATION, as Ctrl-C does;
//   - hide runs the command (to prepare the next one, in the same working
//     directory) without showing it;
//   - background runs the command, hidden, while the next ones run (e.g.
//     traffic for a watch); the example waits for it before it ends;
//   - test-args='ARGS' are appended to the command when the test checks a
//     timing example (e.g. '--speed 20', so that the check is fast), not
//     when `make docs` generates it.
//
// A file an example reads can be shown too, checked against the file in
// docs/testdata (the block holds the file's text):
//
//	<!-- example-file: flow.yaml -->
//	```yaml
//	...
//	```
//
// A block whose first line starts with "$ cbprobe " and has no marker must
// say why it is not generated, on the line before its fence:
//
//	<!-- example-exempt: needs a JDK and the Spring example's jar -->
//
// An excerpt (head, match or blocks) is marked with "# excerpt" on its
// command line, and "..." stands for every run of lines left out.
package docexamples

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Options are a marker's options; see the package documentation.
type Options struct {
	// Head is the number of output lines kept; 0 keeps all.
	Head int
	// Match keeps only the lines it matches; nil keeps all.
	Match *regexp.Regexp
	// Blocks keeps only the paragraphs whose first line it matches; nil keeps all.
	Blocks *regexp.Regexp
	// Dir is the folder, relative to the repository root, whose copy is the
	// example's working directory; empty means docs/testdata.
	Dir string
	// Exit shows the command's exit code after its output.
	Exit bool
	// Timing marks output that depends on timing, compared by Shape.
	Timing bool
	// Demo runs the command against the reference service.
	Demo bool
	// Interrupt, when above 0, cancels the command after that long.
	Interrupt time.Duration
	// Hide runs the command without showing it.
	Hide bool
	// Background runs the command, hidden, while the next ones run.
	Background bool
	// TestArgs are appended to the command's arguments when a test checks a
	// timing example, not when the docs are generated.
	TestArgs []string
}

// Excerpted reports whether the options keep only part of the output.
func (o Options) Excerpted() bool { return o.Head > 0 || o.Match != nil || o.Blocks != nil }

// Command is one marker: a cbprobe command line and its options.
type Command struct {
	// Shown is the argument text as written in the marker (after "cbprobe ").
	Shown string
	// Args are Shown split as a shell would.
	Args []string
	// Opts are the marker's options.
	Opts Options
}

// Heading is the command line printed at the top of the command's output.
func (c Command) Heading() string {
	h := "$ cbprobe " + c.Shown
	if c.Opts.Exit {
		h += `; echo "exit $?"`
	}
	var notes []string
	if c.Opts.Interrupt > 0 {
		notes = append(notes, "Ctrl-C after "+c.Opts.Interrupt.String())
	}
	if c.Opts.Excerpted() {
		notes = append(notes, "excerpt")
	}
	if len(notes) > 0 {
		h += "    # " + strings.Join(notes, "; ")
	}
	return h
}

// Render is the text a block shows for this command: its heading, then the
// output cut as the options say, then "exit N" when Opts.Exit is set. output
// is what the command printed and code its exit code.
func (c Command) Render(output string, code int) string {
	if c.Opts.Hide {
		return ""
	}
	var b strings.Builder
	b.WriteString(c.Heading())
	b.WriteByte('\n')
	b.WriteString(Excerpt(output, c.Opts))
	if c.Opts.Exit {
		fmt.Fprintf(&b, "exit %d\n", code)
	}
	return b.String()
}

// Example is one marked block of a Markdown file.
type Example struct {
	// Line is the 1-based line of its first marker.
	Line int
	// Commands are its markers, in order.
	Commands []Command
	// Body is the text between the fences, each line ending in "\n".
	Body string
	// Timing is set when any command is marked timing.
	Timing bool
	// Demo is set when any command is marked demo.
	Demo bool
	// File, for an example-file marker, is the file the block shows (a path
	// relative to docs/testdata); such an example has no Commands.
	File string

	open, close int // 0-based line indexes of the opening and closing fences
}

// Doc is a parsed Markdown file.
type Doc struct {
	// Examples are its marked blocks, in order.
	Examples []Example
	// Unmarked are the 1-based lines of the opening fences of the blocks that start with
	// "$ cbprobe " but have neither a marker nor an exemption.
	Unmarked []int
	lines    []string
}

const (
	markerPrefix = "<!-- example:"
	optsPrefix   = "<!-- example["
	exemptPrefix = "<!-- example-exempt:"
	filePrefix   = "<!-- example-file:"
)

// isMarker reports whether line is an example marker (not an exemption or a file).
func isMarker(line string) bool {
	return strings.HasPrefix(line, markerPrefix) || strings.HasPrefix(line, optsPrefix)
}

// fileMarker returns the file an example-file marker names.
func fileMarker(line string) (string, bool) {
	rest, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), filePrefix)
	if !ok {
		return "", false
	}
	rest, ok = strings.CutSuffix(rest, "-->")
	return strings.TrimSpace(rest), ok && strings.TrimSpace(rest) != ""
}

// Parse finds the marked blocks of a Markdown file; name is used in errors.
// A marker not followed by a fenced block, or one it cannot read, is an error.
func Parse(name string, src []byte) (*Doc, error) {
	d := &Doc{lines: strings.SplitAfter(string(src), "\n")}
	for i := 0; i < len(d.lines); i++ {
		if strings.HasPrefix(d.lines[i], "```") {
			// an unmarked block: skip it, noting it when it shows a cbprobe command
			start := i
			for i++; i < len(d.lines) && !strings.HasPrefix(d.lines[i], "```"); i++ {
			}
			if start+1 < len(d.lines) && strings.HasPrefix(d.lines[start+1], "$ cbprobe ") &&
				(start == 0 || !strings.HasPrefix(d.lines[start-1], exemptPrefix)) {
				d.Unmarked = append(d.Unmarked, start+1)
			}
			continue
		}
		if file, ok := fileMarker(d.lines[i]); ok {
			ex := Example{Line: i + 1, File: file}
			if err := d.readBlock(name, i+1, &ex); err != nil {
				return nil, err
			}
			i = ex.close
			d.Examples = append(d.Examples, ex)
			continue
		}
		if !isMarker(d.lines[i]) {
			if strings.HasPrefix(d.lines[i], "<!-- example") && !strings.HasPrefix(d.lines[i], exemptPrefix) {
				return nil, fmt.Errorf("%s:%d: want a colon: <!-- example[OPTIONS]: ARGS --> or <!-- example-exempt: REASON -->", name, i+1)
			}
			continue
		}
		ex := Example{Line: i + 1}
		for ; i < len(d.lines) && isMarker(d.lines[i]); i++ {
			c, err := parseMarker(strings.TrimRight(d.lines[i], "\r\n"))
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, i+1, err)
			}
			ex.Commands = append(ex.Commands, c)
			ex.Timing = ex.Timing || c.Opts.Timing
			ex.Demo = ex.Demo || c.Opts.Demo
		}
		if err := d.readBlock(name, i, &ex); err != nil {
			return nil, err
		}
		i = ex.close
		d.Examples = append(d.Examples, ex)
	}
	return d, nil
}

// readBlock reads the fenced block that starts at line index i into ex.
func (d *Doc) readBlock(name string, i int, ex *Example) error {
	if i >= len(d.lines) || !strings.HasPrefix(d.lines[i], "```") {
		return fmt.Errorf("%s:%d: an example marker must be followed by a fenced block (```)", name, ex.Line)
	}
	ex.open = i
	for i++; i < len(d.lines) && !strings.HasPrefix(d.lines[i], "```"); i++ {
		ex.Body += d.lines[i]
	}
	if i >= len(d.lines) {
		return fmt.Errorf("%s:%d: the example's fenced block is not closed", name, ex.Line)
	}
	ex.close = i
	return nil
}

// Rewrite returns the file with each example's body replaced by bodies[i]
// (one per example, each ending in "\n"); everything else is kept.
func (d *Doc) Rewrite(bodies []string) []byte {
	var b bytes.Buffer
	next := 0
	for i := 0; i < len(d.lines); i++ {
		if next < len(d.Examples) && i == d.Examples[next].open+1 {
			b.WriteString(bodies[next])
			i = d.Examples[next].close
			next++
		}
		b.WriteString(d.lines[i])
	}
	return b.Bytes()
}

// parseMarker reads `<!-- example[OPTIONS]: ARGS -->`.
func parseMarker(line string) (Command, error) {
	rest := strings.TrimPrefix(line, "<!-- example")
	rest, ok := strings.CutSuffix(strings.TrimSpace(rest), "-->")
	if !ok {
		return Command{}, fmt.Errorf("marker %q: want <!-- example[OPTIONS]: ARGS -->", line)
	}
	var opts string
	if strings.HasPrefix(rest, "[") {
		end := strings.Index(rest, "]:")
		if end < 0 {
			return Command{}, fmt.Errorf("marker %q: options want a closing \"]:\"", line)
		}
		opts, rest = rest[1:end], rest[end+1:]
	}
	shown, ok := strings.CutPrefix(rest, ":")
	if !ok {
		return Command{}, fmt.Errorf("marker %q: want a colon before the command", line)
	}
	c := Command{Shown: strings.TrimSpace(shown)}
	var err error
	if c.Args, err = Split(c.Shown); err != nil {
		return Command{}, fmt.Errorf("marker %q: %w", line, err)
	}
	if len(c.Args) == 0 {
		return Command{}, fmt.Errorf("marker %q: no command", line)
	}
	if c.Opts, err = parseOptions(opts); err != nil {
		return Command{}, fmt.Errorf("marker %q: %w", line, err)
	}
	return c, nil
}

func parseOptions(s string) (Options, error) {
	var o Options
	words, err := Split(s)
	if err != nil {
		return o, err
	}
	for _, w := range words {
		key, val, _ := strings.Cut(w, "=")
		switch key {
		case "head":
			if o.Head, err = strconv.Atoi(val); err != nil || o.Head < 1 {
				return o, fmt.Errorf("head=%q: want a number of lines > 0", val)
			}
		case "match", "blocks":
			re, err := regexp.Compile(val)
			if err != nil {
				return o, fmt.Errorf("%s: %w", key, err)
			}
			if key == "match" {
				o.Match = re
			} else {
				o.Blocks = re
			}
		case "dir":
			o.Dir = val
		case "exit":
			o.Exit = true
		case "timing":
			o.Timing = true
		case "demo":
			o.Demo = true
		case "hide":
			o.Hide = true
		case "background":
			o.Background, o.Hide = true, true
		case "interrupt":
			if o.Interrupt, err = time.ParseDuration(val); err != nil || o.Interrupt <= 0 {
				return o, fmt.Errorf("interrupt=%q: want a duration above 0", val)
			}
		case "test-args":
			if o.TestArgs, err = Split(val); err != nil {
				return o, fmt.Errorf("test-args: %w", err)
			}
		default:
			return o, fmt.Errorf("unknown option %q (want head=N, match=RE, blocks=RE, dir=PATH, exit, timing, demo, interrupt=D, hide, background, test-args=ARGS)", w)
		}
	}
	return o, nil
}

// Split splits s into words as a POSIX shell would, for the quoting a
// command line in the docs uses: blanks separate words, 'single' and
// "double" quotes group them (no escapes inside single quotes; \" and \\
// inside double quotes), and a backslash outside quotes escapes the next
// character.
func Split(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == ' ' || ch == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case ch == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("unclosed ' in %q", s)
			}
			cur.WriteString(s[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case ch == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unclosed \" in %q", s)
			}
			inWord = true
		case ch == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// Excerpt cuts output as o says (head, match, blocks, in that order of
// precedence: blocks first, then match, then head), writing "..." for each
// run of lines left out. Without an excerpt option it returns output
// unchanged, but always ending in "\n" when not empty.
func Excerpt(output string, o Options) string {
	if output != "" && !strings.HasSuffix(output, "\n") {
		output += "\n"
	}
	if !o.Excerpted() {
		return output
	}
	lines := strings.Split(strings.TrimSuffix(output, "\n"), "\n")
	keep := make([]bool, len(lines))
	for i := range keep {
		keep[i] = true
	}
	if o.Blocks != nil {
		in := false
		for i, l := range lines {
			if strings.TrimSpace(l) == "" {
				in = false
			} else if i == 0 || strings.TrimSpace(lines[i-1]) == "" {
				in = o.Blocks.MatchString(l)
			}
			keep[i] = in
		}
	}
	if o.Match != nil {
		for i, l := range lines {
			keep[i] = keep[i] && o.Match.MatchString(l)
		}
	}
	if o.Head > 0 {
		n := 0
		for i := range lines {
			if keep[i] {
				n++
				keep[i] = n <= o.Head
			}
		}
	}
	var b strings.Builder
	gap := false
	for i, l := range lines {
		if !keep[i] {
			gap = true
			continue
		}
		if gap {
			b.WriteString("...\n")
		}
		gap = false
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if gap {
		b.WriteString("...\n")
	}
	return b.String()
}

var (
	number  = regexp.MustCompile(`[0-9]+([.:][0-9]+)*`)
	blanks  = regexp.MustCompile(`\s+`)
	columns = regexp.MustCompile(`\s{2,}`)
)

// verdictDependent reports whether an unindented line is one whose presence
// depends on the machine's load rather than on the command: a warning that
// the load generator fell behind, a note (e.g. a first scrape before any
// traffic), watch's "history:" line (events buffered before its first poll:
// present when the traffic started first), or main's report of an
// inconclusive run and its fix.
func verdictDependent(l string) bool {
	for _, p := range []string{"warning: ", "note: ", "history: ", "cbprobe: inconclusive", "cbprobe: fix: "} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return false
}

// Shape is what a timing-dependent example is checked by: the lines that
// give its structure, with every number masked. A line counts when it starts
// in the first column (command lines, headings such as "findings", "arm ...",
// "Run directory: ...") or, indented, is a table header (its first word is
// "phase" or "PHASE" and it holds no number), except the lines whose presence
// depends on the machine's load (see verdictDependent). In a line that
// counts, every number (digits, with "." or ":" between them) but an exit
// code becomes "N", every run of blanks one space, and the status of the
// summary's first line ("cbprobe retry  complete  12.4s": complete,
// inconclusive, ...) "STATUS", since a loaded machine makes a run
// inconclusive. Everything else (rows, rates, transitions, findings' text)
// varies from run to run with the machine's load and is not compared.
func Shape(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		t := strings.TrimSpace(l)
		if t == "" || t == "..." || verdictDependent(l) {
			continue
		}
		first, _, _ := strings.Cut(t, " ")
		if l[0] == ' ' || l[0] == '\t' {
			if first != "phase" && first != "PHASE" || number.MatchString(t) {
				continue
			}
		}
		if !strings.HasPrefix(t, "exit ") {
			t = number.ReplaceAllString(t, "N")
		}
		if strings.HasPrefix(l, "cbprobe ") {
			// the summary's first line: "cbprobe NAME  STATUS  [target URL  ]DURATION"
			if f := columns.Split(t, -1); len(f) >= 2 {
				f[1] = "STATUS"
				t = strings.Join(f, "  ")
			}
		}
		b.WriteString(blanks.ReplaceAllString(t, " "))
		b.WriteByte('\n')
	}
	return b.String()
}
