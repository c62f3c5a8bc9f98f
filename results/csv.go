package results

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// RequestColumns is the header row of requests.csv.
func RequestColumns() []string {
	return []string{"arm", "seq", "phase", "user", "intended", "sent", "latency_ms", "status", "outcome", "error"}
}

// SampleColumns is the header row of samples.csv.
func SampleColumns() []string {
	return []string{"arm", "time", "source", "breaker", "state", "failure_rate", "slow_call_rate",
		"failure_rate_threshold", "slow_call_rate_threshold", "buffered", "failed", "slow", "slow_failed", "not_permitted"}
}

// oneLine replaces line breaks with spaces, so that every CSV record is one
// line and a truncated file loses at most its last line.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.NewReplacer("\r\n", " ", "\r", " ", "\n", " ").Replace(s)
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	return time.Parse(time.RFC3339Nano, s)
}

func formatFloat(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return ""
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

func parseFloat(s string) (float64, error) {
	if s == "" {
		return Unknown, nil
	}
	return strconv.ParseFloat(s, 64)
}

// requestRecord appends r's CSV fields to rec[:0].
func requestRecord(rec []string, r Request) []string {
	return append(rec[:0], oneLine(r.Arm), strconv.Itoa(r.Seq), oneLine(r.Phase), strconv.Itoa(r.User),
		formatTime(r.Intended), formatTime(r.Sent),
		strconv.FormatFloat(float64(r.Latency)/float64(time.Millisecond), 'f', 3, 64),
		strconv.Itoa(r.Status), string(r.Outcome), oneLine(r.Error))
}

// parseRequest reads one requests.csv record (RequestColumns order).
func parseRequest(rec []string) (Request, error) {
	var r Request
	if len(rec) != len(RequestColumns()) {
		return r, fmt.Errorf("%d fields, want %d", len(rec), len(RequestColumns()))
	}
	var err error
	r.Arm, r.Phase, r.Outcome, r.Error = rec[0], rec[2], Outcome(rec[8]), rec[9]
	if r.Seq, err = strconv.Atoi(rec[1]); err != nil {
		return r, fmt.Errorf("seq: %w", err)
	}
	if r.User, err = strconv.Atoi(rec[3]); err != nil {
		return r, fmt.Errorf("user: %w", err)
	}
	if r.Intended, err = parseTime(rec[4]); err != nil {
		return r, fmt.Errorf("intended: %w", err)
	}
	if r.Sent, err = parseTime(rec[5]); err != nil {
		return r, fmt.Errorf("sent: %w", err)
	}
	ms, err := strconv.ParseFloat(rec[6], 64)
	if err != nil {
		return r, fmt.Errorf("latency_ms: %w", err)
	}
	r.Latency = time.Duration(math.Round(ms * float64(time.Millisecond)))
	if r.Status, err = strconv.Atoi(rec[7]); err != nil {
		return r, fmt.Errorf("status: %w", err)
	}
	switch r.Outcome {
	case OutcomeSucceeded, OutcomeRejected, OutcomeFailed:
	default:
		return r, fmt.Errorf("outcome: %q is not succeeded, rejected or failed", rec[8])
	}
	return r, nil
}

// sampleRecord appends s's CSV fields to rec[:0].
func sampleRecord(rec []string, s Sample) []string {
	return append(rec[:0], oneLine(s.Arm), formatTime(s.Time), oneLine(s.Source), oneLine(s.Breaker), oneLine(s.State),
		formatFloat(s.FailureRate), formatFloat(s.SlowCallRate),
		formatFloat(s.FailureRateThreshold), formatFloat(s.SlowCallRateThreshold),
		formatFloat(s.Buffered), formatFloat(s.Failed), formatFloat(s.Slow),
		formatFloat(s.SlowFailed), formatFloat(s.NotPermitted))
}

// parseSample reads one samples.csv record (SampleColumns order). Empty
// numbers read as Unknown.
func parseSample(rec []string) (Sample, error) {
	var s Sample
	cols := SampleColumns()
	if len(rec) != len(cols) {
		return s, fmt.Errorf("%d fields, want %d", len(rec), len(cols))
	}
	var err error
	s.Arm, s.Source, s.Breaker, s.State = rec[0], rec[2], rec[3], rec[4]
	if s.Time, err = parseTime(rec[1]); err != nil {
		return s, fmt.Errorf("time: %w", err)
	}
	nums := []*float64{&s.FailureRate, &s.SlowCallRate, &s.FailureRateThreshold, &s.SlowCallRateThreshold,
		&s.Buffered, &s.Failed, &s.Slow, &s.SlowFailed, &s.NotPermitted}
	for i, p := range nums {
		if *p, err = parseFloat(rec[5+i]); err != nil {
			return s, fmt.Errorf("%s: %w", cols[5+i], err)
		}
	}
	return s, nil
}
