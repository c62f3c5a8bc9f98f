package attack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// parsePath splits a dotted JSON path ("data.transactionKey", "items.0.id").
func parsePath(p string) ([]string, error) {
	if strings.TrimSpace(p) == "" {
		return nil, fmt.Errorf("empty JSON path (want e.g. orderId or data.transactionKey)")
	}
	parts := strings.Split(p, ".")
	for _, s := range parts {
		if s == "" {
			return nil, fmt.Errorf("JSON path %q has an empty segment", p)
		}
	}
	return parts, nil
}

// extract reads the value at path from a JSON document. Strings come back
// without quotes, numbers as written, booleans as true/false, objects and
// lists as compact JSON. null and missing keys are errors.
func extract(body []byte, path []string) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("answer is not JSON: %v", err)
	}
	for i, seg := range path {
		switch node := v.(type) {
		case map[string]any:
			next, ok := node[seg]
			if !ok {
				return "", fmt.Errorf("no key %q at %s", seg, pathPrefix(path, i))
			}
			v = next
		case []any:
			n, err := strconv.Atoi(seg)
			if err != nil || n < 0 {
				return "", fmt.Errorf("%s is a list; %q is not an index", pathPrefix(path, i), seg)
			}
			if n >= len(node) {
				return "", fmt.Errorf("index %d out of range at %s (length %d)", n, pathPrefix(path, i), len(node))
			}
			v = node[n]
		default:
			return "", fmt.Errorf("%s is not an object or list", pathPrefix(path, i))
		}
	}
	switch x := v.(type) {
	case nil:
		return "", fmt.Errorf("%s is null", strings.Join(path, "."))
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	case bool:
		return strconv.FormatBool(x), nil
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return "", fmt.Errorf("encode %s: %v", strings.Join(path, "."), err)
		}
		return string(b), nil
	}
}

func pathPrefix(path []string, i int) string {
	if i == 0 {
		return "the top level"
	}
	return strings.Join(path[:i], ".")
}
