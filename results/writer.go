package results

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// File names inside a run directory.
const (
	RunFile      = "run.json"
	RequestsFile = "requests.csv"
	SamplesFile  = "samples.csv"
	EventsFile   = "events.jsonl"
	SummaryFile  = "summary.md"
	JUnitFile    = "junit.xml"
	HTMLFile     = "report.html"
)

// DefaultDir is the run directory used when the caller gives none:
// cbprobe-results/<experiment>-<UTC time as 20060102T150405Z>. Two runs
// started in the same second get the same name: create it with CreateDefault,
// which adds a suffix.
func DefaultDir(experiment string, now time.Time) string {
	name := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ' ' || r == ':' {
			return '_'
		}
		return r
	}, experiment)
	if name == "" {
		name = "run"
	}
	return filepath.Join("cbprobe-results", name+"-"+now.UTC().Format("20060102T150405Z"))
}

// maxDefaultSuffix bounds the names CreateDefault tries in one second.
const maxDefaultSuffix = 1000

// CreateDefault creates the default run directory of experiment at now
// (DefaultDir), or, when another run already took that name, the first free
// DefaultDir-2, -3, … (up to -1000): two runs started in the same second never
// collide. The directory is claimed atomically (mkdir), so concurrent
// processes each get their own.
func CreateDefault(experiment string, now time.Time) (*Writer, error) {
	base := DefaultDir(experiment, now)
	dir := base
	for i := 2; ; i++ {
		w, err := Create(dir)
		if err == nil || !errors.Is(err, os.ErrExist) || i > maxDefaultSuffix {
			return w, err
		}
		dir = fmt.Sprintf("%s-%d", base, i)
	}
}

// FileMode is the mode of every file in a run directory, DirMode the mode of
// the directory: readable by all, since runs are made to be uploaded as CI
// artefacts. (The process umask may clear bits, as for any file.)
const (
	FileMode os.FileMode = 0o644
	DirMode  os.FileMode = 0o755
)

// Error is a failure to write or read a run directory. It is an
// infrastructure error: ExitCode reports 3.
type Error struct {
	Op   string // what was being done, e.g. "create run directory"
	Path string // the file or directory involved
	Err  error  // the underlying error
}

// Error returns "op path: cause".
func (e *Error) Error() string { return fmt.Sprintf("%s %s: %v", e.Op, e.Path, e.Err) }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// ExitCode is 2 (usage) when the run directory already exists (the user
// chose an --out that is taken), 3 (infrastructure) otherwise: the output
// could not be written or read.
func (e *Error) ExitCode() int {
	if errors.Is(e.Err, os.ErrExist) {
		return 2
	}
	return 3
}

// errExists is the error of Create for a directory that exists; it wraps
// os.ErrExist so that callers (and Error.ExitCode) can tell it apart.
type errExists struct{}

func (errExists) Error() string {
	return "already exists; cbprobe never overwrites a run (choose another --out)"
}
func (errExists) Is(target error) bool { return target == os.ErrExist }

// Writer streams one run directory to disk. Request, Sample and Event never
// block the caller: records queue in memory and one background goroutine per
// file writes them, so a slow disk shows as Backlog, not as late sends.
// Checkpoint rewrites run.json (complete=false); Finish or Abort end the run.
// Every method is safe for concurrent use.
type Writer struct {
	dir      string
	requests *appender[Request]
	samples  *appender[Sample]
	events   *appender[Event]
	backlog  atomic.Int64
	max      atomic.Int64

	mu     sync.Mutex // serialises run.json writes and ending
	ended  bool
	closed bool

	cpMu sync.Mutex // guards last and done, for Interrupt
	last *Run       // copy of the last checkpoint
	done bool       // Finish or Abort wrote run.json
}

// opener opens one of the streamed files for writing.
type opener func(name string) (io.WriteCloser, error)

// Create makes the run directory dir (and its parents) and starts the
// streaming writers. It never reuses a directory: if dir exists, it fails. A
// run.json with complete=false is written at once. If anything fails, what
// Create made is removed and the *Error says what could not be written.
func Create(dir string) (*Writer, error) {
	return create(dir, nil)
}

func create(dir string, open opener) (*Writer, error) {
	if dir == "" {
		return nil, &Error{Op: "create run directory", Path: dir, Err: errors.New("empty path")}
	}
	if parent := filepath.Dir(dir); parent != "." {
		if err := os.MkdirAll(parent, DirMode); err != nil {
			return nil, &Error{Op: "create run directory", Path: dir, Err: err}
		}
	}
	if err := os.Mkdir(dir, DirMode); err != nil {
		if errors.Is(err, os.ErrExist) {
			err = errExists{}
		}
		return nil, &Error{Op: "create run directory", Path: dir, Err: err}
	}
	if open == nil {
		open = func(name string) (io.WriteCloser, error) {
			return os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, FileMode)
		}
	}
	w := &Writer{dir: dir}
	fail := func(err error) (*Writer, error) {
		w.closeStreams()
		_ = os.RemoveAll(dir) // we made it a moment ago: nothing of anyone else's is inside
		return nil, err
	}
	var err error
	if w.requests, err = newAppender(w, RequestsFile, open, csvEncoder(RequestColumns(), requestRecord)); err != nil {
		return fail(err)
	}
	if w.samples, err = newAppender(w, SamplesFile, open, csvEncoder(SampleColumns(), sampleRecord)); err != nil {
		return fail(err)
	}
	if w.events, err = newAppender(w, EventsFile, open, jsonlEncoder); err != nil {
		return fail(err)
	}
	if err := w.writeRun(&Run{Schema: Schema, Reason: "running (or killed before it could finish)"}); err != nil {
		return fail(err)
	}
	return w, nil
}

// Dir is the run directory.
func (w *Writer) Dir() string { return w.dir }

// Request queues one row of requests.csv. It never blocks.
func (w *Writer) Request(r Request) { w.requests.add(r) }

// Sample queues one row of samples.csv. It never blocks.
func (w *Writer) Sample(s Sample) { w.samples.add(s) }

// Event queues one line of events.jsonl. It never blocks.
func (w *Writer) Event(e Event) { w.events.add(e) }

// Backlog is the number of records queued in memory and not yet written.
func (w *Writer) Backlog() int { return int(w.backlog.Load()) }

// MaxBacklog is the largest Backlog seen so far.
func (w *Writer) MaxBacklog() int { return int(w.max.Load()) }

// Written reports how many requests, samples and events reached their files.
func (w *Writer) Written() (requests, samples, events int) {
	return int(w.requests.written.Load()), int(w.samples.written.Load()), int(w.events.written.Load())
}

// Err returns the first error of the streaming writers, nil if none.
func (w *Writer) Err() error {
	return errors.Join(w.requests.error(), w.samples.error(), w.events.error())
}

func (w *Writer) grow(n int64) {
	v := w.backlog.Add(n)
	for {
		m := w.max.Load()
		if v <= m || w.max.CompareAndSwap(m, v) {
			return
		}
	}
}

// Checkpoint rewrites run.json from run with complete=false, so that a run
// killed later still says what it had. run is not modified.
func (w *Writer) Checkpoint(run *Run) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return &Error{Op: "checkpoint", Path: w.dir, Err: errors.New("run already finished")}
	}
	c := *run
	c.Complete = false
	if c.Reason == "" {
		c.Reason = "running (or killed before it could finish)"
	}
	w.cpMu.Lock()
	w.last = &c
	w.cpMu.Unlock()
	return w.writeRun(&c)
}

// Finish ends a run that ran to its end: it drains the streams, then writes
// summary.md, junit.xml and report.html, and last run.json with
// complete=true (each file written to a temporary name and renamed). It sets
// run.Schema, run.Ended (when zero) and run.Complete. If a stream failed to
// write, run.json stays complete=false with the reason and the error is returned.
func (w *Writer) Finish(run *Run) error {
	return w.end(run, true, "")
}

// Abort ends an interrupted run: it drains the streams and writes run.json
// with complete=false, interrupted=true and reason, plus summary.md,
// junit.xml and report.html from what was recorded.
func (w *Writer) Abort(run *Run, reason string) error {
	return w.end(run, false, reason)
}

// Close stops the streaming writers after writing what is queued, leaving
// run.json as the last Checkpoint wrote it. Finish and Abort close too;
// Close after them does nothing.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closeStreams()
	return w.Err()
}

func (w *Writer) closeStreams() {
	if w.closed {
		return
	}
	w.closed = true
	if w.requests != nil {
		w.requests.close()
	}
	if w.samples != nil {
		w.samples.close()
	}
	if w.events != nil {
		w.events.close()
	}
}

func (w *Writer) end(run *Run, complete bool, reason string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return &Error{Op: "finish run", Path: w.dir, Err: errors.New("run already finished")}
	}
	w.ended = true
	w.closeStreams()
	if run.Schema == "" {
		run.Schema = Schema
	}
	if run.Ended.IsZero() {
		run.Ended = time.Now().UTC()
	}
	streamErr := w.Err()
	run.Complete = complete && streamErr == nil
	run.Interrupted = !complete
	run.Reason = reason
	run.Verdict = verdictOf(run)
	if streamErr != nil {
		run.Reason = strings.TrimSpace(run.Reason + " " + fmt.Sprintf("(results incomplete: %v)", streamErr))
	}
	if m := w.MaxBacklog(); m > 10000 {
		run.Warnings = append(run.Warnings, fmt.Sprintf("the disk fell behind: up to %d records waited in memory before being written", m))
	}
	rec, loadErr := loadStreams(w.dir)
	if rec == nil {
		rec = &Record{}
	}
	rec.Dir, rec.Run = w.dir, *run
	var errs []error
	if streamErr != nil {
		errs = append(errs, streamErr)
	}
	if loadErr != nil {
		errs = append(errs, loadErr)
	}
	// The reports first, run.json last: complete=true appears only once every
	// other file is in place.
	for _, f := range []struct {
		name   string
		render func(io.Writer, *Record) error
	}{
		{SummaryFile, func(o io.Writer, r *Record) error { return WriteMarkdown(o, &r.Run) }},
		{JUnitFile, func(o io.Writer, r *Record) error { return WriteJUnit(o, &r.Run) }},
		{HTMLFile, WriteHTML},
	} {
		if err := writeFileAtomic(w.dir, f.name, func(o io.Writer) error { return f.render(o, rec) }); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 && run.Complete {
		run.Complete = false
		run.Reason = fmt.Sprintf("results incomplete: %v", errors.Join(errs...))
		run.Verdict = verdictOf(run)
	}
	if err := w.writeRun(run); err != nil {
		errs = append(errs, err)
	}
	w.cpMu.Lock()
	w.done = true
	w.cpMu.Unlock()
	if err := errors.Join(errs...); err != nil {
		var re *Error
		if errors.As(err, &re) {
			return err
		}
		return &Error{Op: "write run", Path: w.dir, Err: err}
	}
	return nil
}

// verdictOf is Run.Decide for a finished run, VerdictIncomplete otherwise.
func verdictOf(run *Run) string {
	if !run.Complete {
		return VerdictIncomplete
	}
	return run.Decide()
}

func (w *Writer) writeRun(run *Run) error {
	return writeFileAtomic(w.dir, RunFile, func(o io.Writer) error { return EncodeRun(o, run) })
}

// EncodeRun writes run as indented JSON (the run.json format). Nil slices
// are written as empty arrays.
func EncodeRun(o io.Writer, run *Run) error {
	c := *run
	if c.Schema == "" {
		c.Schema = Schema
	}
	if c.Arms == nil {
		c.Arms = []Arm{}
	}
	if c.Findings == nil {
		c.Findings = []Finding{}
	}
	if c.Expectations == nil {
		c.Expectations = []Expectation{}
	}
	arms := make([]Arm, len(c.Arms))
	for i, a := range c.Arms {
		if a.Phases == nil {
			a.Phases = []PhaseStats{}
		}
		if a.Transitions == nil {
			a.Transitions = []Transition{}
		}
		arms[i] = a
	}
	c.Arms = arms
	enc := json.NewEncoder(o)
	enc.SetIndent("", "  ")
	return enc.Encode(&c)
}

// writeFileAtomic writes name in dir through a temporary file and a rename,
// so readers see the old file or the new one, never half of it.
func writeFileAtomic(dir, name string, write func(io.Writer) error) error {
	path := filepath.Join(dir, name)
	f, err := os.CreateTemp(dir, "."+name+".tmp*")
	if err != nil {
		return &Error{Op: "write", Path: path, Err: err}
	}
	tmp := f.Name()
	// CreateTemp makes 0600 files: give reports the same mode as the streams.
	err = f.Chmod(FileMode)
	bw := bufio.NewWriter(f)
	if err == nil {
		err = write(bw)
	}
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return &Error{Op: "write", Path: path, Err: err}
	}
	return nil
}

// encoder writes a batch of records to bw (the header first when header is true).
type encoder[T any] func(bw *bufio.Writer, header bool, batch []T) error

func csvEncoder[T any](columns []string, record func([]string, T) []string) encoder[T] {
	var cw *csv.Writer
	var rec []string
	return func(bw *bufio.Writer, header bool, batch []T) error {
		if cw == nil {
			cw = csv.NewWriter(bw)
		}
		if header {
			if err := cw.Write(columns); err != nil {
				return err
			}
		}
		for _, v := range batch {
			rec = record(rec, v)
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
		cw.Flush()
		return cw.Error()
	}
}

func jsonlEncoder(bw *bufio.Writer, _ bool, batch []Event) error {
	enc := json.NewEncoder(bw)
	for i := range batch {
		if err := enc.Encode(&batch[i]); err != nil {
			return err
		}
	}
	return nil
}

// appender queues records in memory and writes them from one goroutine.
type appender[T any] struct {
	w       *Writer
	name    string
	out     io.WriteCloser
	bw      *bufio.Writer
	encode  encoder[T]
	written atomic.Int64

	mu      sync.Mutex
	cond    *sync.Cond
	queue   []T
	free    []T
	closing bool
	err     error
	done    chan struct{}
}

func newAppender[T any](w *Writer, name string, open opener, enc encoder[T]) (*appender[T], error) {
	out, err := open(name)
	if err != nil {
		return nil, &Error{Op: "create", Path: filepath.Join(w.dir, name), Err: err}
	}
	a := &appender[T]{w: w, name: name, out: out, bw: bufio.NewWriterSize(out, 64<<10), encode: enc, done: make(chan struct{})}
	a.cond = sync.NewCond(&a.mu)
	err = enc(a.bw, true, nil)
	if err == nil {
		err = a.bw.Flush()
	}
	if err != nil {
		_ = out.Close()
		return nil, &Error{Op: "write", Path: filepath.Join(w.dir, name), Err: err}
	}
	go a.loop()
	return a, nil
}

func (a *appender[T]) add(v T) {
	a.mu.Lock()
	if a.closing {
		a.mu.Unlock()
		return
	}
	a.queue = append(a.queue, v)
	first := len(a.queue) == 1
	a.w.grow(1)
	a.mu.Unlock()
	if first {
		// The flusher waits only on an empty queue: one signal per batch is enough.
		a.cond.Signal()
	}
}

func (a *appender[T]) loop() {
	defer close(a.done)
	for {
		a.mu.Lock()
		for len(a.queue) == 0 && !a.closing {
			a.cond.Wait()
		}
		batch := a.queue
		a.queue = a.free[:0]
		a.free = nil
		failed := a.err != nil
		a.mu.Unlock()
		if len(batch) == 0 {
			return // closing and drained
		}
		if !failed {
			err := a.encode(a.bw, false, batch)
			if err == nil {
				err = a.bw.Flush()
			}
			if err != nil {
				a.mu.Lock()
				a.err = &Error{Op: "write", Path: filepath.Join(a.w.dir, a.name), Err: err}
				a.mu.Unlock()
			} else {
				a.written.Add(int64(len(batch)))
			}
		}
		a.w.grow(-int64(len(batch)))
		clear(batch)
		a.mu.Lock()
		a.free = batch[:0]
		a.mu.Unlock()
	}
}

func (a *appender[T]) close() {
	a.mu.Lock()
	a.closing = true
	a.mu.Unlock()
	a.cond.Broadcast()
	<-a.done
	if err := a.out.Close(); err != nil {
		a.mu.Lock()
		if a.err == nil {
			a.err = &Error{Op: "close", Path: filepath.Join(a.w.dir, a.name), Err: err}
		}
		a.mu.Unlock()
	}
}

func (a *appender[T]) error() error {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// Interrupt marks the run directory at once as interrupted with reason: it
// rewrites run.json from the last Checkpoint with complete=false and
// interrupted=true, without waiting for the streams or the reports. It is for
// a process about to exit (a second Ctrl-C); what the streams wrote so far
// stays on disk, and `cbprobe report` reads it. Safe to call while another
// method runs; after Finish or Abort it does nothing.
func (w *Writer) Interrupt(reason string) error {
	w.cpMu.Lock()
	c := w.last
	w.cpMu.Unlock()
	if w.isEnded() {
		return nil
	}
	if c == nil {
		c = &Run{Schema: Schema}
	}
	r := *c
	r.Complete, r.Interrupted, r.Reason, r.Verdict = false, true, reason, VerdictIncomplete
	r.Ended = time.Now().UTC()
	return writeFileAtomic(w.dir, RunFile, func(o io.Writer) error { return EncodeRun(o, &r) })
}

func (w *Writer) isEnded() bool {
	w.cpMu.Lock()
	defer w.cpMu.Unlock()
	return w.done
}
