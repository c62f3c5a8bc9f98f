package attack

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Shard is one process's share of a plan split over Count load generators.
// In open-model mode slot k of every phase (the k-th scheduled send,
// 0-based, due at phase start + k/rate) belongs to shard k mod Count, so each
// shard sends at rate/Count and the shards' sends together are exactly the
// single-process plan. In sequential mode user u (1-based) belongs to shard
// (u-1) mod Count and keeps its number. The zero Shard (Count 0) and any
// Shard with Count 1 is the whole plan.
type Shard struct {
	// Index is this shard's 0-based index, 0 <= Index < Count.
	Index int
	// Count is the number of shards; 0 or 1 means no split.
	Count int
}

// ParseShard reads "i/N" (0 <= i < N, N >= 1), e.g. "2/3".
func ParseShard(s string) (Shard, error) {
	is, ns, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Shard{}, fmt.Errorf("shard %q: want INDEX/COUNT, e.g. 0/3", s)
	}
	i, err := strconv.Atoi(strings.TrimSpace(is))
	if err != nil {
		return Shard{}, fmt.Errorf("shard %q: index %q is not a number", s, is)
	}
	n, err := strconv.Atoi(strings.TrimSpace(ns))
	if err != nil {
		return Shard{}, fmt.Errorf("shard %q: count %q is not a number", s, ns)
	}
	sh := Shard{Index: i, Count: n}
	if n < 1 {
		return Shard{}, fmt.Errorf("shard %q: count must be at least 1", s)
	}
	if err := sh.check(); err != nil {
		return Shard{}, fmt.Errorf("shard %q: %w", s, err)
	}
	return sh, nil
}

func (s Shard) check() error {
	switch {
	case s.Count < 0:
		return fmt.Errorf("negative count %d", s.Count)
	case s.Count == 0 && s.Index != 0:
		return fmt.Errorf("index %d without a count", s.Index)
	case s.Count > 0 && (s.Index < 0 || s.Index >= s.Count):
		return fmt.Errorf("index %d outside 0..%d", s.Index, s.Count-1)
	}
	return nil
}

// String formats the shard as ParseShard reads it ("" for no split).
func (s Shard) String() string {
	if s.Count <= 1 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Split reports whether the plan is split over more than one process.
func (s Shard) Split() bool { return s.Count > 1 }

// owns counts the slots k in [0, n) with k mod Count == Index.
func (s Shard) owns(n int) int {
	if !s.Split() {
		return n
	}
	if n <= s.Index {
		return 0
	}
	return (n-1-s.Index)/s.Count + 1
}

// Planned returns how many of the phase's scheduled sends are this shard's
// (Phase.Planned for no split). The shards' Planned sum to Phase.Planned.
func (s Shard) Planned(p Phase) int { return s.owns(p.Planned()) }

// Users returns how many of users sequential users are this shard's.
func (s Shard) Users(users int) int { return s.owns(users) }

// User returns the global 1-based number of this shard's j-th user (j 1-based).
func (s Shard) User(j int) int {
	if !s.Split() {
		return j
	}
	return s.Index + 1 + (j-1)*s.Count
}

// slot is the phase's global slot index of this shard's i-th slot (0-based).
func (s Shard) slot(i int) int {
	if !s.Split() {
		return i
	}
	return s.Index + i*s.Count
}

// dueBefore counts this shard's sends of ph (started at start) due before cutoff.
func (s Shard) dueBefore(ph Phase, start, cutoff time.Time) int {
	return s.owns(dueBefore(ph, start, cutoff))
}
