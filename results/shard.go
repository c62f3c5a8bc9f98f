package results

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"time"
)

// Shard identifies one shard run of a plan split over Count load generators.
type Shard struct {
	// Index is the 0-based shard index, 0 <= Index < Count.
	Index int `json:"index"`
	// Count is the number of shards the plan is split over.
	Count int `json:"count"`
	// Plan is the plan's identity: PlanID of PlanItems. Shards of one plan
	// have the same Plan.
	Plan string `json:"plan"`
	// PlanItems are what the plan is made of ("phases", "seed", "flow",
	// "shards", ...), as text; merge names the items that differ.
	PlanItems map[string]string `json:"planItems"`
	// StartAt is the shared start time of the plan's first phase (UTC).
	StartAt time.Time `json:"startAt,omitzero"`
}

// Merged records the shard runs a merged run was built from.
type Merged struct {
	// Shards are the shard run directories, by shard index.
	Shards []string `json:"shards"`
	// Plan is the shards' common plan identity (Shard.Plan).
	Plan string `json:"plan"`
	// PlanItems are the shards' common plan items.
	PlanItems map[string]string `json:"planItems"`
	// Duplicates counts the samples and events dropped because another shard
	// had recorded the same one (several shards polled one service).
	DuplicateSamples int `json:"duplicateSamples"`
	DuplicateEvents  int `json:"duplicateEvents"`
}

// PlanID is the hex SHA-256 of items in key order ("key=value\n" each): the
// identity of a plan.
func PlanID(items map[string]string) string {
	keys := make([]string, 0, len(items))
	for k := range items {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(items[k])
		b.WriteByte('\n')
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}
