package conformance

import "bytes"

// lineCounter gives the 1-based line of byte offsets that mostly grow, as a
// decoder walking a file asks for them: it counts newlines only between the
// previous offset and the new one, so a whole file costs one pass instead of
// one pass per step (lineAt from the start for every step was quadratic: a
// 20 MB vector took 18 s).
type lineCounter struct {
	data    []byte
	off     int64 // offset of the last answer
	line    int   // its line
	scanned int64 // bytes scanned so far (for tests)
}

// at returns the line of offset off (clamped to the data).
func (c *lineCounter) at(off int64) int {
	off = max(0, min(off, int64(len(c.data))))
	if c.line == 0 || off < c.off {
		c.off, c.line = 0, 1
	}
	c.line += bytes.Count(c.data[c.off:off], []byte{'\n'})
	c.scanned += off - c.off
	c.off = off
	return c.line
}
