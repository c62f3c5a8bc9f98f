package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cbprobe/cbprobe/attack"
	"github.com/cbprobe/cbprobe/results"
	"github.com/spf13/cobra"
)

// shardFlags are --shard and --start-at, shared by attack and experiment.
type shardFlags struct {
	shard   string
	startAt string
}

func (s *shardFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&s.shard, "shard", "", "send only share INDEX of a plan split over COUNT load generators (INDEX/COUNT, 0-based, e.g. 0/3); needs --start-at; merge the runs with 'cbprobe report merge'")
	f.StringVar(&s.startAt, "start-at", "", "start the first phase at this time (RFC3339, e.g. 2026-12-01T14:00:00Z), or align:DURATION for the next multiple of DURATION since the Unix epoch at least 1s away")
}

// startMargin is how far in the future an align: start is at least.
const startMargin = time.Second

// startLate is how far in the past an RFC3339 --start-at may be (clock skew
// between machines) before it is refused.
const startLate = time.Second

// resolve reads the flags at now: the shard (zero without --shard) and the
// start time (zero without --start-at).
func (s *shardFlags) resolve(now time.Time) (attack.Shard, time.Time, error) {
	var (
		sh  attack.Shard
		at  time.Time
		err error
	)
	if s.shard != "" {
		if sh, err = attack.ParseShard(s.shard); err != nil {
			return sh, at, usageErr(fmt.Errorf("--shard: %w", err))
		}
	}
	if s.startAt != "" {
		if at, err = parseStartAt(s.startAt, now); err != nil {
			return sh, at, usageErr(fmt.Errorf("--start-at: %w", err))
		}
	}
	if sh.Split() && at.IsZero() {
		return sh, at, usageErr(errors.New("--shard needs --start-at: every shard must start the plan at the same moment (give them all the same RFC3339 time, or align:DURATION)"))
	}
	return sh, at, nil
}

// parseStartAt reads an RFC3339 time (not more than startLate in the past)
// or "align:D": the first multiple of D since the Unix epoch that is at
// least startMargin after now. Processes started within the same D-long
// window then agree on the start; merge refuses shards that do not.
func parseStartAt(s string, now time.Time) (time.Time, error) {
	if d, ok := strings.CutPrefix(s, "align:"); ok {
		step, err := time.ParseDuration(d)
		if err != nil || step <= 0 {
			return time.Time{}, fmt.Errorf("%q: want align:DURATION with a positive duration, e.g. align:30s", s)
		}
		earliest := now.Add(startMargin).UnixNano()
		n := (earliest + int64(step) - 1) / int64(step)
		return time.Unix(0, n*int64(step)).UTC(), nil
	}
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not an RFC3339 time (e.g. 2026-12-01T14:00:00Z) or align:DURATION", s)
	}
	if now.Sub(at) > startLate {
		return time.Time{}, fmt.Errorf("%s is %s in the past: give a start time every shard can still meet", s, now.Sub(at).Round(time.Millisecond))
	}
	return at.UTC(), nil
}

// shardRecord is run.json's shard record, nil when the plan is not split.
func shardRecord(sh attack.Shard, at time.Time, items map[string]string) *results.Shard {
	if !sh.Split() {
		return nil
	}
	items["shards"] = fmt.Sprint(sh.Count)
	return &results.Shard{Index: sh.Index, Count: sh.Count, Plan: results.PlanID(items), PlanItems: items, StartAt: at.UTC()}
}

// fileDigest is the hex SHA-256 of a file's content, or the read error's text
// (so two shards with unreadable files still compare equal only if the
// error is the same).
func fileDigest(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "unreadable: " + err.Error()
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// digest is the hex SHA-256 of b.
func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
