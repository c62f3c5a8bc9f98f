package results

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Record is a run read back from its directory: run.json plus the streamed
// files. It is what the report writers and `cbprobe report` work from.
type Record struct {
	// Dir is the run directory.
	Dir string
	// Run is run.json.
	Run Run
	// Requests are the rows of requests.csv, in file order.
	Requests []Request
	// Samples are the rows of samples.csv, in file order.
	Samples []Sample
	// Events are the lines of events.jsonl, in file order.
	Events []Event
	// Warnings say what Load had to skip (a truncated last line).
	Warnings []string
}

// Load reads the run in dir, complete or partial. A last line cut short (a
// run killed while writing) is dropped with a warning in Record.Warnings; any
// other malformed line is an error naming the file and line. A missing
// requests.csv, samples.csv or events.jsonl reads as empty with a warning.
func Load(dir string) (*Record, error) {
	data, err := os.ReadFile(filepath.Join(dir, RunFile))
	if err != nil {
		return nil, &Error{Op: "read run", Path: filepath.Join(dir, RunFile), Err: err}
	}
	var run Run
	if err := json.Unmarshal(data, &run); err != nil {
		return nil, &Error{Op: "read run", Path: filepath.Join(dir, RunFile), Err: err}
	}
	if run.Schema != Schema {
		return nil, &Error{Op: "read run", Path: filepath.Join(dir, RunFile),
			Err: fmt.Errorf("schema %q, want %q", run.Schema, Schema)}
	}
	rec, err := loadStreams(dir)
	if err != nil {
		return nil, err
	}
	rec.Run = run
	rec.rebuild()
	return rec, nil
}

// rebuild fills in, for a run that did not finish (killed with SIGKILL, or
// run.json last checkpointed early), the arms from what the streams hold:
// each arm's request counts, first rejected request and latency come from
// requests.csv when run.json has fewer. A warning says so, with the numbers
// of requests, samples and events on disk.
func (rec *Record) rebuild() {
	if rec.Run.Complete {
		return
	}
	byArm := map[string][]Request{}
	var order []string
	for _, r := range rec.Requests {
		if _, ok := byArm[r.Arm]; !ok {
			order = append(order, r.Arm)
		}
		byArm[r.Arm] = append(byArm[r.Arm], r)
	}
	rebuilt := false
	for _, name := range order {
		reqs := byArm[name]
		a := rec.Run.Arm(name)
		if a == nil {
			rec.Run.Arms = append(rec.Run.Arms, Arm{Name: name, Thresholds: Thresholds{FailureRate: Unknown, SlowCallRate: Unknown}})
			a = &rec.Run.Arms[len(rec.Run.Arms)-1]
		}
		if a.Totals().Sent >= len(reqs) {
			continue
		}
		rebuilt = true
		for i := range a.Phases {
			p := &a.Phases[i]
			p.Sent, p.Succeeded, p.Rejected, p.Failed = 0, 0, 0, 0
		}
		a.FirstRejectedRequest = 0
		for _, r := range reqs {
			a.Add(r)
		}
		a.MarkRequests(reqs)
		a.SetLatency(reqs)
		if a.Breaker == "" {
			for _, s := range rec.Samples {
				if s.Arm == name {
					a.Breaker = s.Breaker
					break
				}
			}
		}
	}
	if rebuilt {
		rec.Run.Warnings = append(rec.Run.Warnings, fmt.Sprintf(
			"the run stopped before it could write its summary (killed?): the counts above are rebuilt from the files on disk: %d requests, %d samples, %d events",
			len(rec.Requests), len(rec.Samples), len(rec.Events)))
	}
}

// loadStreams reads requests.csv, samples.csv and events.jsonl.
func loadStreams(dir string) (*Record, error) {
	rec := &Record{Dir: dir}
	var err error
	if rec.Requests, err = loadCSV(rec, dir, RequestsFile, RequestColumns(), parseRequest); err != nil {
		return nil, err
	}
	if rec.Samples, err = loadCSV(rec, dir, SamplesFile, SampleColumns(), parseSample); err != nil {
		return nil, err
	}
	if rec.Events, err = loadJSONL(rec, dir, EventsFile); err != nil {
		return nil, err
	}
	return rec, nil
}

// readLines reads path and cuts an unterminated last line, noting it.
func readLines(rec *Record, path string) ([]byte, bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		rec.Warnings = append(rec.Warnings, fmt.Sprintf("%s is missing", filepath.Base(path)))
		return nil, false, nil
	}
	if err != nil {
		return nil, false, &Error{Op: "read", Path: path, Err: err}
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		cut := bytes.LastIndexByte(data, '\n') + 1
		rec.Warnings = append(rec.Warnings, fmt.Sprintf("%s: dropped a truncated last line (%d bytes)", filepath.Base(path), len(data)-cut))
		data = data[:cut]
	}
	return data, true, nil
}

func loadCSV[T any](rec *Record, dir, name string, columns []string, parse func([]string) (T, error)) ([]T, error) {
	path := filepath.Join(dir, name)
	data, ok, err := readLines(rec, path)
	if err != nil || !ok {
		return nil, err
	}
	out, err := parseCSV(rec, name, data, columns, parse)
	if err != nil {
		return nil, &Error{Op: "read", Path: path, Err: err}
	}
	return out, nil
}

// parseCSV reads whole CSV lines: a header naming at least columns, then records.
func parseCSV[T any](rec *Record, name string, data []byte, columns []string, parse func([]string) (T, error)) ([]T, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		rec.Warnings = append(rec.Warnings, fmt.Sprintf("%s has no header", name))
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	// Columns are found by name, so files with added columns still load.
	index := make([]int, len(columns))
	for i, c := range columns {
		index[i] = -1
		for j, h := range header {
			if h == c {
				index[i] = j
			}
		}
		if index[i] < 0 {
			return nil, fmt.Errorf("header has no column %q", c)
		}
	}
	var out []T
	fields := make([]string, len(columns))
	for {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err // a *csv.ParseError names its line
		}
		line, _ := r.FieldPos(0)
		if len(raw) != len(header) {
			return nil, fmt.Errorf("line %d: %d fields, header has %d", line, len(raw), len(header))
		}
		for i, j := range index {
			fields[i] = raw[j]
		}
		v, err := parse(fields)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		out = append(out, v)
	}
}

func loadJSONL(rec *Record, dir, name string) ([]Event, error) {
	path := filepath.Join(dir, name)
	data, ok, err := readLines(rec, path)
	if err != nil || !ok {
		return nil, err
	}
	var out []Event
	for i, line := range bytes.Split(data, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, &Error{Op: "read", Path: path, Err: fmt.Errorf("line %d: %w", i+1, err)}
		}
		out = append(out, e)
	}
	return out, nil
}
