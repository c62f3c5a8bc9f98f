package results

import (
	"bufio"
	"bytes"
	"cmp"
	"container/heap"
	"encoding/binary"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// MergeError says why shard runs cannot be merged (plans that differ, a
// missing or repeated shard). ExitCode is 2.
type MergeError struct {
	// Msg names the difference, with the directories it is between.
	Msg string
}

// Error implements error.
func (e *MergeError) Error() string { return "merge: " + e.Msg }

// ExitCode is 2: the shards given do not make one run.
func (e *MergeError) ExitCode() int { return 2 }

// MergeOptions says where and how to write a merged run.
type MergeOptions struct {
	// Out is the merged run directory; it must not exist.
	Out string
	// HTML also writes report.html. It reads every merged request into
	// memory (the charts need them), unlike the rest of the merge.
	HTML bool
}

// MergeStats says what a merge read and how much it had to hold.
type MergeStats struct {
	// Requests is the number of requests merged.
	Requests int
	// MaxHeld is the largest number of requests held in memory at once by
	// the per-shard reordering (requests.csv is written in answer order, the
	// merge needs intended order).
	MaxHeld int
	// MaxPhase is the largest number of requests of one phase held for the
	// phase's latency percentiles.
	MaxPhase int
	// LatencyRuns is the number of sorted runs of latencies (one a phase)
	// spilled to a temporary file for the arm's percentiles.
	LatencyRuns int
}

// Merge merges the run directories of the shards of one plan (runs made with
// --shard i/N, every i once) into one run in opt.Out: requests ordered by
// intended time and numbered 1..n in that order, samples and events of all
// shards with exact duplicates dropped (shards polling one service read the
// same events), per-phase counts summed, transitions taken from every
// shard (each change once, at its earliest observation), first OPEN and
// first rejected request recomputed with Arm.MarkRequests, and the verdict
// recomputed. Shards whose plans differ are refused with a *MergeError
// naming the difference.
//
// Requests are streamed: each shard's requests.csv is read once in file
// order and put back in intended order through a buffer of the requests
// read ahead of the next one due (at most what was in flight at once), and
// the shards are merged k-way by intended time. Memory is that buffer, one
// phase's latencies (for its exact percentiles), the distinct latencies at
// 1 µs (for the arm's) and the samples and events (which grow with the
// run's length and polling rate, not with its requests).
func Merge(dirs []string, opt MergeOptions) (_ *Run, _ MergeStats, err error) {
	var st MergeStats
	runs, err := readShardRuns(dirs)
	if err != nil {
		return nil, st, err
	}
	first := runs[0]
	out := opt.Out
	if out == "" {
		return nil, st, &MergeError{Msg: "no output directory (--out)"}
	}
	if parent := filepath.Dir(out); parent != "." {
		if err := os.MkdirAll(parent, DirMode); err != nil {
			return nil, st, &Error{Op: "create run directory", Path: out, Err: err}
		}
	}
	if err := os.Mkdir(out, DirMode); err != nil {
		if errors.Is(err, os.ErrExist) {
			err = errExists{}
		}
		return nil, st, &Error{Op: "create run directory", Path: out, Err: err}
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(out) // made above: nothing of anyone else's is inside
		}
	}()

	run := &Run{Schema: Schema, Experiment: first.run.Experiment, Description: first.run.Description, Tool: first.run.Tool,
		Target: first.run.Target, Parameters: map[string]any{}, FailOn: first.run.FailOn}
	for k, v := range first.run.Parameters {
		if k != "shard" && k != "startAt" {
			run.Parameters[k] = v
		}
	}
	run.Merged = &Merged{Plan: first.run.Shard.Plan, PlanItems: first.run.Shard.PlanItems}
	arm := Arm{Name: first.run.Arms[0].Name, Description: first.run.Arms[0].Description, Breaker: first.run.Arms[0].Breaker,
		Parameters: first.run.Arms[0].Parameters, Thresholds: first.run.Arms[0].Thresholds, AttemptsPerRequest: 0}
	for _, p := range first.run.Arms[0].Phases {
		arm.Phases = append(arm.Phases, PhaseStats{Name: p.Name, Rate: p.Rate, Duration: p.Duration})
	}
	expectations := 0
	for _, sr := range runs {
		run.Merged.Shards = append(run.Merged.Shards, sr.dir)
		if run.Started.IsZero() || sr.run.Started.Before(run.Started) {
			run.Started = sr.run.Started
		}
		if sr.run.Ended.After(run.Ended) {
			run.Ended = sr.run.Ended
		}
		label := fmt.Sprintf("shard %d/%d", sr.run.Shard.Index, sr.run.Shard.Count)
		if !sr.run.Complete {
			run.Interrupted = true
			run.Reason = strings.TrimSpace(run.Reason + " " + fmt.Sprintf("%s (%s) did not complete: %s.", label, sr.dir, cmp.Or(sr.run.Reason, "no reason recorded")))
		}
		for _, w := range sr.run.Warnings {
			run.Warnings = append(run.Warnings, label+": "+w)
		}
		a := &sr.run.Arms[0]
		for _, p := range a.Phases {
			if mp := arm.Phase(p.Name); mp != nil {
				mp.Planned += p.Planned
				mp.Dropped += p.Dropped
				mp.Late += p.Late
			}
		}
		arm.Transitions = append(arm.Transitions, a.Transitions...)
		arm.Notes = appendNew(arm.Notes, a.Notes...)
		arm.Observation = mergeObservation(arm.Observation, a.Observation, label)
		for _, f := range sr.run.Findings {
			if !slices.ContainsFunc(run.Findings, func(g Finding) bool { return g.ID == f.ID && g.Arm == f.Arm && g.Title == f.Title }) {
				run.Findings = append(run.Findings, f)
			}
		}
		expectations += len(sr.run.Expectations)
	}
	if expectations > 0 {
		run.Warnings = append(run.Warnings, fmt.Sprintf(
			"the shards' %d expectations were checked on each shard's share of the load and are not carried over: check the merged numbers (first OPEN, rejected shares) here", expectations))
	}
	arm.Transitions = dedupTransitions(arm.Transitions)

	if err := mergeRequests(runs, filepath.Join(out, RequestsFile), &arm, &st); err != nil {
		return nil, st, err
	}
	dupS, err := mergeStream(runs, out, SamplesFile, SampleColumns(), parseSample, sampleRecord, func(s Sample) time.Time { return s.Time })
	if err != nil {
		return nil, st, err
	}
	dupE, err := mergeEvents(runs, out)
	if err != nil {
		return nil, st, err
	}
	run.Merged.DuplicateSamples, run.Merged.DuplicateEvents = dupS, dupE
	run.Arms = []Arm{arm}
	run.Complete = !run.Interrupted
	run.Verdict = verdictOf(run)

	rec := &Record{Dir: out, Run: *run}
	if opt.HTML {
		full, err := loadStreams(out)
		if err != nil {
			return nil, st, err
		}
		rec.Requests, rec.Samples, rec.Events = full.Requests, full.Samples, full.Events
	}
	files := []struct {
		name   string
		render func(io.Writer, *Record) error
	}{
		{SummaryFile, func(o io.Writer, r *Record) error { return WriteMarkdown(o, &r.Run) }},
		{JUnitFile, func(o io.Writer, r *Record) error { return WriteJUnit(o, &r.Run) }},
	}
	if opt.HTML {
		files = append(files, struct {
			name   string
			render func(io.Writer, *Record) error
		}{HTMLFile, WriteHTML})
	}
	for _, f := range files {
		if err := writeFileAtomic(out, f.name, func(o io.Writer) error { return f.render(o, rec) }); err != nil {
			return nil, st, err
		}
	}
	if err := writeFileAtomic(out, RunFile, func(o io.Writer) error { return EncodeRun(o, run) }); err != nil {
		return nil, st, err
	}
	return run, st, nil
}

// maxShards is the largest shard count merge accepts.
const maxShards = 10_000

// shardRun is one shard's run.json and directory.
type shardRun struct {
	dir string
	run Run
}

// readShardRuns reads every dir's run.json and checks that they are the
// shards of one plan, every index once; it returns them by shard index.
func readShardRuns(dirs []string) ([]shardRun, error) {
	if len(dirs) == 0 {
		return nil, &MergeError{Msg: "no shard run directories given"}
	}
	runs := make([]shardRun, 0, len(dirs))
	for _, d := range dirs {
		path := filepath.Join(d, RunFile)
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, &Error{Op: "read run", Path: path, Err: err}
		}
		var r Run
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, &Error{Op: "read run", Path: path, Err: err}
		}
		if r.Schema != Schema {
			return nil, &Error{Op: "read run", Path: path, Err: fmt.Errorf("schema %q, want %q", r.Schema, Schema)}
		}
		if r.Shard == nil {
			return nil, &MergeError{Msg: fmt.Sprintf("%s is not a shard run (its run.json has no shard): run the load with --shard i/N", d)}
		}
		if len(r.Arms) != 1 {
			return nil, &MergeError{Msg: fmt.Sprintf("%s has %d arms: merge takes shard runs of one arm (run experiments with --arm)", d, len(r.Arms))}
		}
		runs = append(runs, shardRun{dir: d, run: r})
	}
	ref := runs[0]
	for _, sr := range runs[1:] {
		if msg := planDifference(ref, sr); msg != "" {
			return nil, &MergeError{Msg: msg}
		}
	}
	n := ref.run.Shard.Count
	if n < 2 || n > maxShards {
		return nil, &MergeError{Msg: fmt.Sprintf("%s is shard %d of %d: want 2..%d shards", ref.dir, ref.run.Shard.Index, n, maxShards)}
	}
	byIndex := make([]*shardRun, n)
	for i := range runs {
		sr := &runs[i]
		ix := sr.run.Shard.Index
		if ix < 0 || ix >= n {
			return nil, &MergeError{Msg: fmt.Sprintf("%s is shard %d of %d: index outside 0..%d", sr.dir, ix, n, n-1)}
		}
		if prev := byIndex[ix]; prev != nil {
			return nil, &MergeError{Msg: fmt.Sprintf("shard %d/%d given twice: %s and %s", ix, n, prev.dir, sr.dir)}
		}
		byIndex[ix] = sr
	}
	var missing []string
	for i, sr := range byIndex {
		if sr == nil {
			missing = append(missing, fmt.Sprintf("%d/%d", i, n))
		}
	}
	if len(missing) > 0 {
		return nil, &MergeError{Msg: fmt.Sprintf("shard %s missing: the plan has %d shards, %d given", strings.Join(missing, ", "), n, len(runs))}
	}
	sorted := make([]shardRun, n)
	for i, sr := range byIndex {
		sorted[i] = *sr
	}
	return sorted, nil
}

// planDifference names how b's plan differs from a's, "" when it does not.
func planDifference(a, b shardRun) string {
	sa, sb := a.run.Shard, b.run.Shard
	where := func(s *Shard, dir string) string { return fmt.Sprintf("%s (shard %d/%d)", dir, s.Index, s.Count) }
	if sa.Count != sb.Count {
		return fmt.Sprintf("plans differ: %s is split into %d shards, %s into %d", where(sa, a.dir), sa.Count, where(sb, b.dir), sb.Count)
	}
	keys := make([]string, 0, len(sa.PlanItems)+len(sb.PlanItems))
	for k := range sa.PlanItems {
		keys = append(keys, k)
	}
	for k := range sb.PlanItems {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var diffs []string
	for _, k := range slices.Compact(keys) {
		va, oka := sa.PlanItems[k]
		vb, okb := sb.PlanItems[k]
		switch {
		case !oka:
			diffs = append(diffs, fmt.Sprintf("%s is not set in the first and %q in the second", k, vb))
		case !okb:
			diffs = append(diffs, fmt.Sprintf("%s is %q in the first and not set in the second", k, va))
		case va != vb:
			diffs = append(diffs, fmt.Sprintf("%s is %q in the first and %q in the second", k, va, vb))
		}
	}
	if len(diffs) == 0 && sa.Plan != sb.Plan {
		diffs = append(diffs, fmt.Sprintf("plan identity %s in the first and %s in the second", short(sa.Plan), short(sb.Plan)))
	}
	if !sa.StartAt.Equal(sb.StartAt) {
		diffs = append(diffs, fmt.Sprintf("start time is %s in the first and %s in the second (give every shard the same --start-at)",
			formatTime(sa.StartAt), formatTime(sb.StartAt)))
	}
	if a.run.Arms[0].Name != b.run.Arms[0].Name {
		diffs = append(diffs, fmt.Sprintf("arm is %q in the first and %q in the second", a.run.Arms[0].Name, b.run.Arms[0].Name))
	}
	if len(diffs) == 0 {
		return ""
	}
	return fmt.Sprintf("plans differ between %s and %s: %s", where(sa, a.dir), where(sb, b.dir), strings.Join(diffs, "; "))
}

func short(s string) string { return s[:min(len(s), 12)] }

func appendNew(list []string, items ...string) []string {
	for _, s := range items {
		if !slices.Contains(list, s) {
			list = append(list, s)
		}
	}
	return list
}

// mergeObservation combines the shards' reconciliations: inconclusive when
// any shard's was (its reasons prefixed with the shard), counts summed.
func mergeObservation(acc, o *Observation, label string) *Observation {
	if o == nil {
		return acc
	}
	if acc == nil {
		acc = &Observation{Verdict: ObservationConsistent}
	}
	if o.Verdict == VerdictInconclusive {
		acc.Verdict = VerdictInconclusive
	}
	for _, r := range o.Reasons {
		acc.Reasons = append(acc.Reasons, label+": "+r)
	}
	acc.Fix = appendNew(acc.Fix, o.Fix...)
	for _, n := range o.Notes {
		acc.Notes = append(acc.Notes, label+": "+n)
	}
	acc.Refusals += o.Refusals
	acc.Samples += o.Samples
	acc.PollErrors += o.PollErrors
	acc.Gaps = append(acc.Gaps, o.Gaps...)
	if o.LastSample.After(acc.LastSample) {
		acc.LastSample = o.LastSample
	}
	if o.LastRequest.After(acc.LastRequest) {
		acc.LastRequest = o.LastRequest
	}
	return acc
}

// dedupTransitions orders the shards' transitions by time and keeps each
// state change once: walking them in order, a transition whose From is not
// the state the breaker is already in is another shard's later observation
// of a change already taken, and is dropped. So each change is kept at its
// earliest observation.
func dedupTransitions(ts []Transition) []Transition {
	slices.SortStableFunc(ts, func(a, b Transition) int { return a.At.Compare(b.At) })
	out := ts[:0]
	state := ""
	for _, t := range ts {
		if state != "" && t.From != state {
			continue
		}
		out = append(out, t)
		state = t.To
	}
	return out
}

// reqStream reads one shard's requests.csv and gives its requests back in
// Seq order (the shard numbered its requests 1..n in intended order; the
// file holds them in answer order).
type reqStream struct {
	shard  int
	path   string
	f      *os.File
	cr     *csv.Reader
	index  []int
	fields []string
	next   int
	held   map[int]Request
	eof    bool
	head   Request // the request the heap orders this stream by
}

func openReqStream(shard int, dir string) (*reqStream, error) {
	path := filepath.Join(dir, RequestsFile)
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{Op: "read", Path: path, Err: err}
	}
	cut, err := wholeLines(f)
	if err != nil {
		f.Close()
		return nil, &Error{Op: "read", Path: path, Err: err}
	}
	s := &reqStream{shard: shard, path: path, f: f, next: 1, held: map[int]Request{}}
	s.cr = csv.NewReader(bufio.NewReaderSize(io.LimitReader(f, cut), 256<<10))
	s.cr.FieldsPerRecord = -1
	s.cr.ReuseRecord = true
	header, err := s.cr.Read()
	if errors.Is(err, io.EOF) {
		s.eof = true
		return s, nil
	}
	if err != nil {
		f.Close()
		return nil, &Error{Op: "read", Path: path, Err: err}
	}
	cols := RequestColumns()
	s.index = make([]int, len(cols))
	for i, c := range cols {
		s.index[i] = slices.Index(header, c)
		if s.index[i] < 0 {
			f.Close()
			return nil, &Error{Op: "read", Path: path, Err: fmt.Errorf("header has no column %q", c)}
		}
	}
	s.fields = make([]string, len(cols))
	return s, nil
}

// wholeLines returns the length of f's content up to its last newline, so a
// line cut short by a killed run is left out.
func wholeLines(f *os.File) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := fi.Size()
	buf := make([]byte, 64<<10)
	for end := size; end > 0; {
		start := max(end-int64(len(buf)), 0)
		n, err := f.ReadAt(buf[:end-start], start)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}

// read parses the next row of the file; ok is false at its end.
func (s *reqStream) read() (Request, bool, error) {
	raw, err := s.cr.Read()
	if errors.Is(err, io.EOF) {
		return Request{}, false, nil
	}
	if err != nil {
		return Request{}, false, &Error{Op: "read", Path: s.path, Err: err}
	}
	if len(raw) < len(s.index) {
		line, _ := s.cr.FieldPos(0)
		return Request{}, false, &Error{Op: "read", Path: s.path, Err: fmt.Errorf("line %d: %d fields", line, len(raw))}
	}
	for i, j := range s.index {
		s.fields[i] = raw[j]
	}
	r, err := parseRequest(s.fields)
	if err != nil {
		line, _ := s.cr.FieldPos(0)
		return Request{}, false, &Error{Op: "read", Path: s.path, Err: fmt.Errorf("line %d: %w", line, err)}
	}
	return r, true, nil
}

// pop returns the shard's next request in Seq order; ok is false when the
// shard has none left. A Seq missing from the file (a run killed while
// writing) is skipped once the file is read to its end.
func (s *reqStream) pop(st *MergeStats) (Request, bool, error) {
	for {
		if r, ok := s.held[s.next]; ok {
			delete(s.held, s.next)
			s.next++
			return r, true, nil
		}
		if s.eof {
			if len(s.held) == 0 {
				return Request{}, false, nil
			}
			s.next = slices.Min(mapKeys(s.held))
			continue
		}
		r, ok, err := s.read()
		if err != nil {
			return Request{}, false, err
		}
		if !ok {
			s.eof = true
			continue
		}
		switch {
		case r.Seq == s.next:
			s.next++
			return r, true, nil
		case r.Seq < s.next:
			return Request{}, false, &Error{Op: "read", Path: s.path, Err: fmt.Errorf("request %d appears twice or after its turn", r.Seq)}
		}
		if _, dup := s.held[r.Seq]; dup {
			return Request{}, false, &Error{Op: "read", Path: s.path, Err: fmt.Errorf("request %d appears twice", r.Seq)}
		}
		s.held[r.Seq] = r
		st.MaxHeld = max(st.MaxHeld, len(s.held))
	}
}

func mapKeys(m map[int]Request) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// streamHeap orders the shards' streams by their head request's intended
// time (then shard index, then Seq).
type streamHeap []*reqStream

func (h streamHeap) Len() int { return len(h) }
func (h streamHeap) Less(i, j int) bool {
	a, b := h[i], h[j]
	if c := a.head.Intended.Compare(b.head.Intended); c != 0 {
		return c < 0
	}
	if a.shard != b.shard {
		return a.shard < b.shard
	}
	return a.head.Seq < b.head.Seq
}
func (h streamHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *streamHeap) Push(x any)   { *h = append(*h, x.(*reqStream)) }
func (h *streamHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// mergeRequests k-way merges the shards' requests by intended time into
// path, numbering them 1..n, and counts them into arm (phase counts, first
// rejected request, latency percentiles).
func mergeRequests(runs []shardRun, path string, arm *Arm, st *MergeStats) (err error) {
	h := make(streamHeap, 0, len(runs))
	defer func() {
		for _, s := range h {
			s.f.Close()
		}
	}()
	for i, sr := range runs {
		s, err := openReqStream(i, sr.dir)
		if err != nil {
			return err
		}
		r, ok, err := s.pop(st)
		if err != nil {
			s.f.Close()
			return err
		}
		if !ok {
			s.f.Close()
			continue
		}
		s.head = r
		h = append(h, s)
	}
	heap.Init(&h)

	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, FileMode)
	if err != nil {
		return &Error{Op: "write", Path: path, Err: err}
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 256<<10)
	cw := csv.NewWriter(bw)
	if err := cw.Write(RequestColumns()); err != nil {
		return &Error{Op: "write", Path: path, Err: err}
	}
	var (
		rec      []string
		seq      int
		curPhase string
		phaseMS  []float64
		phaseSum float64
		closed   = map[string]bool{}
		spill    *latencySpill
		allSum   float64
		mk       = newMarker(arm.Transitions)
	)
	for i := range arm.Phases {
		p := &arm.Phases[i]
		p.Sent, p.Succeeded, p.Rejected, p.Failed = 0, 0, 0, 0
	}
	arm.FirstRejectedRequest = 0
	spill, err = newLatencySpill(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer spill.close()
	closePhase := func() error {
		if curPhase == "" {
			return nil
		}
		stats := latencyStats(phaseMS, phaseSum) // sorts phaseMS
		if p := arm.Phase(curPhase); p != nil {
			if closed[curPhase] {
				// The phase came back after another one (not in a plan's
				// intended order): its percentiles would miss the first part.
				p.Latency = LatencyStats{}
			} else {
				p.Latency = stats
			}
		}
		closed[curPhase] = true
		err := spill.add(phaseMS)
		phaseMS, phaseSum = phaseMS[:0], 0
		return err
	}
	for h.Len() > 0 {
		s := h[0]
		r := s.head
		seq++
		r.Seq = seq
		rec = requestRecord(rec, r)
		if err := cw.Write(rec); err != nil {
			return &Error{Op: "write", Path: path, Err: err}
		}
		arm.Add(r)
		mk.add(r)
		if r.Phase != curPhase {
			if err := closePhase(); err != nil {
				return err
			}
			curPhase = r.Phase
		}
		ms := float64(r.Latency) / float64(time.Millisecond)
		phaseMS = append(phaseMS, ms)
		phaseSum += ms
		st.MaxPhase = max(st.MaxPhase, len(phaseMS))
		allSum += ms
		next, ok, err := s.pop(st)
		if err != nil {
			return err
		}
		if ok {
			s.head = next
			heap.Fix(&h, 0)
		} else {
			s.f.Close()
			heap.Pop(&h)
		}
	}
	if err := closePhase(); err != nil {
		return err
	}
	st.Requests = seq
	st.LatencyRuns = len(spill.runs)
	if arm.Latency, err = spill.stats(seq, allSum); err != nil {
		return err
	}
	st.MaxHeld = max(st.MaxHeld, mk.maxRecent)
	// MarkRequests on the few requests the marker kept gives what it gives
	// on them all (see marker); FirstRejectedRequest is Add's, the same.
	arm.MarkRequests(mk.requests())
	cw.Flush()
	if err := cw.Error(); err != nil {
		return &Error{Op: "write", Path: path, Err: err}
	}
	if err := bw.Flush(); err != nil {
		return &Error{Op: "write", Path: path, Err: err}
	}
	if err := f.Sync(); err != nil {
		return &Error{Op: "write", Path: path, Err: err}
	}
	return nil
}

// latencySpill keeps the arm's latencies out of memory for its exact
// percentiles: each phase's latencies, once sorted for the phase's own
// percentiles, are appended to a temporary file as one sorted run, and the
// arm's nearest-rank percentiles are read by merging the runs.
type latencySpill struct {
	f    *os.File
	bw   *bufio.Writer
	runs []latencyRun
	size int64
}

// latencyRun is one sorted run: n float64 values (milliseconds) at off.
type latencyRun struct{ off, n int64 }

func newLatencySpill(dir string) (*latencySpill, error) {
	f, err := os.CreateTemp(dir, ".latencies.*")
	if err != nil {
		return nil, &Error{Op: "write", Path: dir, Err: err}
	}
	return &latencySpill{f: f, bw: bufio.NewWriterSize(f, 256<<10)}, nil
}

func (l *latencySpill) add(sorted []float64) error {
	if len(sorted) == 0 {
		return nil
	}
	var b [8]byte
	for _, v := range sorted {
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(v))
		if _, err := l.bw.Write(b[:]); err != nil {
			return &Error{Op: "write", Path: l.f.Name(), Err: err}
		}
	}
	l.runs = append(l.runs, latencyRun{off: l.size, n: int64(len(sorted))})
	l.size += 8 * int64(len(sorted))
	return nil
}

// stats merges the runs and returns what latencyStats returns for all n
// values (sum in milliseconds): the same nearest-rank percentiles.
func (l *latencySpill) stats(n int, sum float64) (LatencyStats, error) {
	if n == 0 || len(l.runs) == 0 {
		return LatencyStats{}, nil
	}
	if err := l.bw.Flush(); err != nil {
		return LatencyStats{}, &Error{Op: "write", Path: l.f.Name(), Err: err}
	}
	type cursor struct {
		r    *bufio.Reader
		left int64
		v    float64
	}
	next := func(c *cursor) (bool, error) {
		if c.left == 0 {
			return false, nil
		}
		var b [8]byte
		if _, err := io.ReadFull(c.r, b[:]); err != nil {
			return false, &Error{Op: "read", Path: l.f.Name(), Err: err}
		}
		c.left--
		c.v = math.Float64frombits(binary.LittleEndian.Uint64(b[:]))
		return true, nil
	}
	var cs []*cursor
	for _, run := range l.runs {
		c := &cursor{r: bufio.NewReaderSize(io.NewSectionReader(l.f, run.off, 8*run.n), 32<<10), left: run.n}
		if ok, err := next(c); err != nil {
			return LatencyStats{}, err
		} else if ok {
			cs = append(cs, c)
		}
	}
	qs := []float64{0.50, 0.90, 0.95, 0.99}
	ranks := make([]int, len(qs)) // 0-based, as quantile
	for i, q := range qs {
		ranks[i] = max(0, min(int(math.Ceil(q*float64(n)))-1, n-1))
	}
	vals := make([]float64, len(qs))
	last := 0.0
	for rank := 0; len(cs) > 0; rank++ {
		lo := 0
		for i, c := range cs { // few runs (one a phase): a linear scan is enough
			if c.v < cs[lo].v {
				lo = i
			}
		}
		last = cs[lo].v
		for i, r := range ranks {
			if r == rank {
				vals[i] = last
			}
		}
		ok, err := next(cs[lo])
		if err != nil {
			return LatencyStats{}, err
		}
		if !ok {
			cs = slices.Delete(cs, lo, lo+1)
		}
	}
	return LatencyStats{P50: vals[0], P90: vals[1], P95: vals[2], P99: vals[3], Max: last, Mean: sum / float64(n)}, nil
}

func (l *latencySpill) close() {
	name := l.f.Name()
	l.f.Close()
	os.Remove(name)
}

// marker finds, while the merged requests go by in Seq order, the requests
// Arm.MarkRequests needs to give the same answers as it would from every
// request: the first rejected request, and for every moment it looks at
// (each transition's time, and just before the first refusal) the last
// request sent at or before that moment. A request is never sent before its
// intended time, and requests come in intended order, so a moment is settled
// once a request intended after it goes by.
type marker struct {
	moments  []time.Time
	best     []Request
	have     []bool
	firstRej *Request
	// floor is the highest Seq sent before the current request's intended
	// time; recent holds the requests sent at or after it (the late ones),
	// for the moment of the first refusal, known only once it comes.
	floor     Request
	recent    sentHeap
	maxRecent int
}

func newMarker(ts []Transition) *marker {
	m := &marker{}
	for _, t := range ts {
		m.moments = append(m.moments, t.At)
	}
	m.best = make([]Request, len(m.moments))
	m.have = make([]bool, len(m.moments))
	return m
}

func (m *marker) add(r Request) {
	at := r.sentAt()
	for i, t := range m.moments {
		if !at.After(t) {
			m.best[i], m.have[i] = r, true
		}
	}
	if m.firstRej != nil {
		return
	}
	for len(m.recent) > 0 && m.recent[0].sentAt().Before(r.Intended) {
		if q := heap.Pop(&m.recent).(Request); q.Seq > m.floor.Seq {
			m.floor = q
		}
	}
	if r.Outcome == OutcomeRejected {
		c := r
		m.firstRej = &c
		t := r.sentAt().Add(-time.Nanosecond)
		// Every request before r: those in floor were sent before r's
		// intended time, so at or before t; the late ones are checked.
		best, have := m.floor, m.floor.Seq > 0
		for _, q := range m.recent {
			if !q.sentAt().After(t) && q.Seq > best.Seq {
				best, have = q, true
			}
		}
		m.recent = nil
		m.moments = append(m.moments, t)
		m.best = append(m.best, best)
		m.have = append(m.have, have)
		return
	}
	heap.Push(&m.recent, r)
	m.maxRecent = max(m.maxRecent, len(m.recent))
}

// requests returns the requests MarkRequests needs.
func (m *marker) requests() []Request {
	var out []Request
	if m.firstRej != nil {
		out = append(out, *m.firstRej)
	}
	for i, ok := range m.have {
		if ok {
			out = append(out, m.best[i])
		}
	}
	return out
}

// sentHeap orders requests by send time, earliest first.
type sentHeap []Request

func (h sentHeap) Len() int           { return len(h) }
func (h sentHeap) Less(i, j int) bool { return h[i].sentAt().Before(h[j].sentAt()) }
func (h sentHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *sentHeap) Push(x any)        { *h = append(*h, x.(Request)) }
func (h *sentHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// mergeStream reads every shard's CSV file name, drops exact duplicates,
// orders the rest by time (stable: shard order among equal times) and writes
// them to out. It returns how many duplicates it dropped.
func mergeStream[T any](runs []shardRun, out, name string, columns []string, parse func([]string) (T, error),
	record func([]string, T) []string, at func(T) time.Time) (int, error) {
	var all []T
	seen := map[string]bool{}
	dups := 0
	var rec []string
	for _, sr := range runs {
		tmp := &Record{}
		rows, err := loadCSV(tmp, sr.dir, name, columns, parse)
		if err != nil {
			return 0, err
		}
		for _, v := range rows {
			rec = record(rec, v)
			key := strings.Join(rec, "\x00")
			if seen[key] {
				dups++
				continue
			}
			seen[key] = true
			all = append(all, v)
		}
	}
	slices.SortStableFunc(all, func(a, b T) int { return at(a).Compare(at(b)) })
	enc := csvEncoder(columns, record)
	err := writeFileAtomic(out, name, func(o io.Writer) error {
		bw := bufio.NewWriter(o)
		if err := enc(bw, true, all); err != nil {
			return err
		}
		return bw.Flush()
	})
	return dups, err
}

// mergeEvents is mergeStream for events.jsonl.
func mergeEvents(runs []shardRun, out string) (int, error) {
	var all []Event
	seen := map[string]bool{}
	dups := 0
	for _, sr := range runs {
		tmp := &Record{}
		evs, err := loadJSONL(tmp, sr.dir, EventsFile)
		if err != nil {
			return 0, err
		}
		for _, e := range evs {
			b, _ := json.Marshal(e)
			if seen[string(b)] {
				dups++
				continue
			}
			seen[string(b)] = true
			all = append(all, e)
		}
	}
	slices.SortStableFunc(all, func(a, b Event) int { return a.Time.Compare(b.Time) })
	err := writeFileAtomic(out, EventsFile, func(o io.Writer) error {
		bw := bufio.NewWriter(o)
		if err := jsonlEncoder(bw, false, all); err != nil {
			return err
		}
		return bw.Flush()
	})
	return dups, err
}
