package results

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLoadRebuildsKilledRun: a run killed with SIGKILL leaves run.json as its
// first checkpoint wrote it (no arms) and the streamed files. Load shows what
// is on disk: the arm rebuilt from requests.csv, with the numbers of
// requests, samples and events, not an empty arm list.
func TestLoadRebuildsKilledRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	w, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Checkpoint(&Run{Experiment: "attack", Started: t0()}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		out := OutcomeSucceeded
		if i >= 4 {
			out = OutcomeRejected
		}
		w.Request(Request{Arm: "attack", Seq: i, Phase: "p1", Sent: t0().Add(time.Duration(i) * time.Second), Status: 200, Outcome: out})
	}
	w.Sample(Sample{Arm: "attack", Time: t0(), Breaker: "pg", State: "CLOSED", FailureRate: Unknown, SlowCallRate: Unknown})
	w.Event(Event{Time: t0(), Arm: "attack", Kind: "poll-error", Message: "x"})
	if err := w.Close(); err != nil { // what a SIGKILL leaves: streams flushed, run.json untouched
		t.Fatal(err)
	}
	rec, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Run.Arms) != 1 || rec.Run.Arms[0].Totals().Sent != 5 || rec.Run.Arms[0].FirstRejectedRequest != 4 || rec.Run.Arms[0].Breaker != "pg" {
		t.Fatalf("arms %+v, want one arm 'attack' with 5 sent, first rejected 4, breaker pg", rec.Run.Arms)
	}
	if len(rec.Run.Warnings) != 1 || !strings.Contains(rec.Run.Warnings[0], "5 requests, 1 samples, 1 events") {
		t.Errorf("warnings %q, want one saying what is on disk", rec.Run.Warnings)
	}
	// Interrupt marks a run at once, from its last checkpoint, with one file mode.
	dir2 := filepath.Join(t.TempDir(), "run2")
	w2, err := Create(dir2)
	if err != nil {
		t.Fatal(err)
	}
	_ = w2.Checkpoint(&Run{Experiment: "retry"})
	if err := w2.Interrupt("stopped by a second Ctrl-C"); err != nil {
		t.Fatal(err)
	}
	r2, err := Load(dir2)
	if err != nil {
		t.Fatal(err)
	}
	if !r2.Run.Interrupted || r2.Run.Complete || r2.Run.Verdict != VerdictIncomplete || r2.Run.Experiment != "retry" {
		t.Errorf("after Interrupt: %+v, want the checkpoint marked interrupted", r2.Run)
	}
	info, err := os.Stat(filepath.Join(dir2, RunFile))
	if err != nil || info.Mode().Perm() != FileMode&^umask(t) {
		t.Errorf("run.json mode %v, want %v like the streamed files", info.Mode().Perm(), FileMode)
	}
	_ = w2.Close()
}

// umask is the process umask, read from a file this test creates.
func umask(t *testing.T) os.FileMode {
	f := filepath.Join(t.TempDir(), "probe")
	if err := os.WriteFile(f, nil, 0o777); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(f)
	if err != nil {
		t.Fatal(err)
	}
	return 0o777 &^ info.Mode().Perm()
}
