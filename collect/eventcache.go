package collect

import (
	"bytes"
	"encoding/json"
	"hash/maphash"
)

// eventCache parses one event endpoint's answers. An event ring moves by a
// few events between polls, so the cache splits the list into its raw event
// objects with a light scan and decodes only the objects the previous answer
// did not hold; the others are taken from the previous answer by their exact
// bytes. Any body the scan does not recognise (or an event that fails to
// decode) goes through parseEvents, so results and errors are those of
// parseEvents.
type eventCache struct {
	key, kind string
	seed      maphash.Seed
	raws      [][]byte // previous answer's event objects (slices of its body)
	evs       []Event  // previous answer's events, parallel to raws
	index     map[uint64]int
	spare     map[uint64]int
}

func newEventCache(key, kind string) *eventCache {
	return &eventCache{key: key, kind: kind, seed: maphash.MakeSeed(), index: map[uint64]int{}, spare: map[uint64]int{}}
}

// parse returns the events of body; body must not be modified afterwards
// (the cache keeps slices of it until the next call), nor the returned
// events (the cache hands them out again).
func (c *eventCache) parse(body []byte) ([]Event, error) {
	raws, ok := splitEventList(body, c.key, make([][]byte, 0, len(c.raws)+8))
	if !ok {
		c.reset()
		return parseEvents(body, c.key, c.kind)
	}
	evs := make([]Event, len(raws))
	next := c.spare
	clear(next)
	for i, r := range raws {
		h := maphash.Bytes(c.seed, r)
		if j, ok := c.index[h]; ok && bytes.Equal(c.raws[j], r) {
			evs[i] = c.evs[j]
		} else {
			var d eventDTO
			if json.Unmarshal(r, &d) != nil {
				c.reset()
				return parseEvents(body, c.key, c.kind)
			}
			e, err := eventFromDTO(&d, c.kind)
			if err != nil {
				c.reset()
				return parseEvents(body, c.key, c.kind)
			}
			evs[i] = e
		}
		next[h] = i
	}
	c.raws, c.evs = raws, evs
	c.spare, c.index = c.index, next
	return evs, nil
}

func (c *eventCache) reset() {
	c.raws, c.evs = nil, nil
	clear(c.index)
}

func isJSONSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// splitEventList recognises exactly `{"<key>":[{...},{...}]}` (any JSON
// whitespace between tokens) and appends each array element's raw bytes to
// out. Elements must be objects; their content is only delimited here (string
// and nesting aware), not validated. Anything else returns ok false.
func splitEventList(b []byte, key string, out [][]byte) (_ [][]byte, ok bool) {
	i := 0
	ws := func() {
		for i < len(b) && isJSONSpace(b[i]) {
			i++
		}
	}
	lit := func(s string) bool {
		ws()
		if len(b)-i < len(s) || string(b[i:i+len(s)]) != s {
			return false
		}
		i += len(s)
		return true
	}
	if !lit("{") || !lit(`"`+key+`"`) || !lit(":") || !lit("[") {
		return nil, false
	}
	ws()
	if i < len(b) && b[i] == ']' {
		i++
	} else {
		for {
			ws()
			end, ok := objectEnd(b, i)
			if !ok {
				return nil, false
			}
			out = append(out, b[i:end])
			i = end
			if lit(",") {
				continue
			}
			if !lit("]") {
				return nil, false
			}
			break
		}
	}
	if !lit("}") {
		return nil, false
	}
	ws()
	return out, i == len(b)
}

// objectEnd returns the index just past the JSON object starting at b[i].
func objectEnd(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '{' {
		return 0, false
	}
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1, b[i] == '}'
			}
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			if i >= len(b) {
				return 0, false
			}
		}
	}
	return 0, false
}
