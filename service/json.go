package service

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// SpringApplicationJSON returns the value of SPRING_APPLICATION_JSON that gives a
// Spring Boot application the properties props (dotted keys as in
// application.properties, e.g. resilience4j.timelimiter.configs.default.timeout-duration).
//
// Keys are nested at their dots into JSON objects. A bracketed part stays attached
// to the name before it: resilience4j.circuitbreaker.instances[A#b(String)].x becomes
// {"resilience4j":{"circuitbreaker":{"instances[A#b(String)]":{"x":...}}}}. Spring's
// SpringApplicationJsonEnvironmentPostProcessor flattens a JSON tree by joining
// keys with "." and keeps every key as written, so each property reaches Spring's
// binder under exactly the name it has in application.properties (brackets,
// dots and commas inside brackets included). Where two keys cannot share a tree
// (a.b=1 and a.b.c=2), the later one in sorted order is written as a dotted key
// at the top level, which flattens to the same name. Values are JSON strings;
// Spring converts them as it does properties-file values.
func SpringApplicationJSON(props map[string]string) (string, error) {
	return mergeSpringJSON("", props)
}

// mergeSpringJSON adds props to the JSON object base ("" for none); props win.
func mergeSpringJSON(base string, props map[string]string) (string, error) {
	tree := map[string]any{}
	if strings.TrimSpace(base) != "" {
		if err := json.Unmarshal([]byte(base), &tree); err != nil {
			return "", fmt.Errorf("SPRING_APPLICATION_JSON already set in the environment is not a JSON object: %w", err)
		}
		if tree == nil {
			tree = map[string]any{}
		}
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		segs, err := splitPropertyKey(k)
		if err != nil {
			return "", err
		}
		put(tree, k, segs, props[k])
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(tree); err != nil {
		return "", fmt.Errorf("encode SPRING_APPLICATION_JSON: %w", err)
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// put stores value under the path segs of tree; on a conflict with what is
// already there, it stores the whole dotted key at the top level instead.
func put(tree map[string]any, key string, segs []string, value string) {
	node := tree
	for _, s := range segs[:len(segs)-1] {
		switch child := node[s].(type) {
		case nil:
			m := map[string]any{}
			node[s] = m
			node = m
		case map[string]any:
			node = child
		default: // a value or a list already sits where a subtree is needed
			tree[key] = value
			return
		}
	}
	last := segs[len(segs)-1]
	if _, isTree := node[last].(map[string]any); isTree {
		tree[key] = value
		return
	}
	node[last] = value
}

// splitPropertyKey splits a dotted property key at the dots outside brackets,
// the way Spring's ConfigurationPropertyName reads it.
func splitPropertyKey(key string) ([]string, error) {
	if strings.TrimSpace(key) == "" {
		return nil, fmt.Errorf("property key %q is empty", key)
	}
	var segs []string
	depth, start := 0, 0
	for i := 0; i < len(key); i++ {
		switch key[i] {
		case '[':
			depth++
		case ']':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("property key %q: ']' without '['", key)
			}
		case '.':
			if depth > 0 {
				continue
			}
			if i == start {
				return nil, fmt.Errorf("property key %q: empty part before '.' at offset %d", key, i)
			}
			segs = append(segs, key[start:i])
			start = i + 1
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("property key %q: '[' without ']'", key)
	}
	if start == len(key) {
		return nil, fmt.Errorf("property key %q ends with '.'", key)
	}
	return append(segs, key[start:]), nil
}

// PropertiesFromJSON reads a SPRING_APPLICATION_JSON value the way Spring Boot's
// SpringApplicationJsonEnvironmentPostProcessor does: the keys of nested objects
// are joined to their parent's with ".", list items get [i], and every value
// becomes a string (numbers as written). It is the inverse of
// SpringApplicationJSON, for services that are not Spring (cbprobe's tests run
// the reference service this way).
func PropertiesFromJSON(js string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(js) == "" {
		return out, nil
	}
	dec := json.NewDecoder(strings.NewReader(js))
	dec.UseNumber()
	var tree map[string]any
	if err := dec.Decode(&tree); err != nil {
		return nil, fmt.Errorf("SPRING_APPLICATION_JSON is not a JSON object: %w", err)
	}
	var walk func(name string, v any)
	walk = func(name string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				n := k
				if name != "" {
					n = name + "." + k
				}
				walk(n, c)
			}
		case []any:
			for i, c := range x {
				walk(fmt.Sprintf("%s[%d]", name, i), c)
			}
		case nil:
			out[name] = ""
		default:
			out[name] = fmt.Sprint(x)
		}
	}
	walk("", tree)
	return out, nil
}
