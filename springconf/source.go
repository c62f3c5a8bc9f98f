package springconf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// maxEntries bounds the number of flattened properties (aliases can multiply them).
const maxEntries = 200000

// element is one part of a property name: "instances", or "[Name#x(A,B)]" kept exactly.
type element struct {
	text      string // without brackets
	bracketed bool
}

// entry is one flattened property as the file wrote it.
type entry struct {
	name  string // flattened name as written, e.g. resilience4j.circuitbreaker.instances.[X].failureRateThreshold
	elems []element
	value string
	line  int
	null  bool // YAML null or an empty mapping/sequence
}

// parseName splits a flattened property name into elements, Spring style: '.' separates
// elements outside brackets; "[...]" is an element of its own and keeps its text exactly.
func parseName(name string) ([]element, error) {
	var out []element
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, element{text: cur.String()})
			cur.Reset()
		}
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch c {
		case '.':
			flush()
		case '[':
			flush()
			end := strings.IndexByte(name[i+1:], ']')
			if end < 0 {
				return nil, fmt.Errorf("unclosed '[' in %q", name)
			}
			out = append(out, element{text: name[i+1 : i+1+end], bracketed: true})
			i += end + 1
		case ']':
			return nil, fmt.Errorf("unexpected ']' in %q", name)
		default:
			cur.WriteByte(c)
		}
	}
	flush()
	if len(out) == 0 {
		return nil, fmt.Errorf("empty property name")
	}
	return out, nil
}

// canon is the relaxed-binding form of a property-name element: lower case, without '-'
// and '_' (so failureRateThreshold, failure_rate_threshold and failure-rate-threshold meet).
func canon(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '-' || c == '_':
		case c >= 'A' && c <= 'Z':
			b.WriteByte(c + 'a' - 'A')
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// boundMapKey applies Spring's map-key rule to an unbracketed key: every character other
// than an ASCII letter, digit, '-', '_' or '.' is dropped. Bracketed keys are kept exactly.
// '_' is kept: checked on Spring Boot 3.5.7 with resilience4j-spring-boot3 2.4.0, where
// instances.my_name created the circuit breaker "my_name" (and "with space" became
// "withspace", "Client#method(int)" became "Clientmethodint").
func boundMapKey(e element) string {
	if e.bracketed {
		return e.text
	}
	var b strings.Builder
	for i := 0; i < len(e.text); i++ {
		c := e.text[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// rawKey renders an element as written in a key path: brackets kept.
func rawKey(e element) string {
	if e.bracketed {
		return "[" + e.text + "]"
	}
	return e.text
}

// --- YAML ---------------------------------------------------------------------------

type yamlFlattener struct {
	file     string
	entries  []entry
	keyLines map[string]int // canonical key of every mapping key -> its line
}

// parseYAML returns the flattened properties of each YAML document, in order, and for
// each document the line of every mapping key (by canonical key).
func parseYAML(file string, data []byte) ([][]entry, []map[string]int, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs [][]entry
	var lines []map[string]int
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, yamlError(file, err)
		}
		f := &yamlFlattener{file: file, keyLines: map[string]int{}}
		if len(doc.Content) > 0 {
			if err := f.walk("", doc.Content[0], 0); err != nil {
				return nil, nil, err
			}
		}
		docs = append(docs, f.entries)
		lines = append(lines, f.keyLines)
		if len(docs) > 1000 {
			return nil, nil, errorf(file, 0, "", "more than 1000 YAML documents")
		}
	}
	return docs, lines, nil
}

// yamlError turns a yaml.v3 error ("yaml: line 3: ...") into an *Error with the line.
func yamlError(file string, err error) *Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if strings.HasPrefix(msg, "line ") {
		rest := msg[len("line "):]
		if i := strings.IndexByte(rest, ':'); i > 0 {
			if n, convErr := strconv.Atoi(rest[:i]); convErr == nil {
				line = n
				msg = strings.TrimSpace(rest[i+1:])
			}
		}
	}
	return &Error{File: file, Line: line, Msg: "YAML: " + msg}
}

func joinYAMLKey(path, key string) string {
	switch {
	case path == "":
		return key
	case strings.HasPrefix(key, "["):
		return path + key
	default:
		return path + "." + key
	}
}

func (f *yamlFlattener) add(path string, n *yaml.Node, value string, null bool) error {
	if len(f.entries) >= maxEntries {
		return errorf(f.file, n.Line, path, "more than %d properties (alias expansion?)", maxEntries)
	}
	if path == "" {
		return errorf(f.file, n.Line, "", "a value at the top level; a Spring configuration file is a mapping")
	}
	elems, err := parseName(path)
	if err != nil {
		return errorf(f.file, n.Line, path, "%v", err)
	}
	f.entries = append(f.entries, entry{name: path, elems: elems, value: value, line: n.Line, null: null})
	return nil
}

func (f *yamlFlattener) walk(path string, n *yaml.Node, depth int) error {
	if depth > 200 {
		return errorf(f.file, n.Line, path, "YAML nested deeper than 200 levels")
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			return errorf(f.file, n.Line, path, "YAML alias without an anchor")
		}
		return f.walk(path, n.Alias, depth+1)
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if err := f.walk(path, c, depth+1); err != nil {
				return err
			}
		}
		return nil
	case yaml.ScalarNode:
		null := n.Tag == "!!null"
		v := n.Value
		if null {
			v = ""
		}
		return f.add(path, n, v, null)
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			return f.add(path, n, "", true)
		}
		for i, c := range n.Content {
			if err := f.walk(path+"["+strconv.Itoa(i)+"]", c, depth+1); err != nil {
				return err
			}
		}
		return nil
	case yaml.MappingNode:
		if len(n.Content) == 0 {
			return f.add(path, n, "", true)
		}
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.AliasNode && k.Alias != nil {
				k = k.Alias
			}
			if k.Kind != yaml.ScalarNode {
				return errorf(f.file, k.Line, path, "a YAML key must be a scalar")
			}
			if k.Tag == "!!merge" || (k.Value == "<<" && k.Style == 0) {
				if err := f.walkMerge(path, v, depth+1); err != nil {
					return err
				}
				continue
			}
			if prev, dup := seen[k.Value]; dup {
				return errorf(f.file, k.Line, joinYAMLKey(path, k.Value), "duplicate YAML key (first at line %d)", prev)
			}
			seen[k.Value] = k.Line
			child := joinYAMLKey(path, k.Value)
			if elems, err := parseName(child); err == nil {
				if c := canonKey(elems); f.keyLines[c] == 0 {
					f.keyLines[c] = k.Line
				}
			}
			if err := f.walk(child, v, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return errorf(f.file, n.Line, path, "unsupported YAML node")
}

func (f *yamlFlattener) walkMerge(path string, v *yaml.Node, depth int) error {
	if v.Kind == yaml.AliasNode && v.Alias != nil {
		v = v.Alias
	}
	switch v.Kind {
	case yaml.MappingNode:
		return f.walk(path, v, depth)
	case yaml.SequenceNode:
		for _, c := range v.Content {
			if err := f.walkMerge(path, c, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return errorf(f.file, v.Line, path, "a YAML merge key '<<' needs a mapping")
}

// --- .properties --------------------------------------------------------------------

// parseProperties reads java.util.Properties syntax: '#' and '!' comments, key and value
// separated by '=', ':' or white space, backslash escapes and line continuations.
// Spring's "#---" (or "!---") line separates documents.
func parseProperties(file string, data []byte) ([][]entry, error) {
	if !utf8.Valid(data) {
		// Java reads .properties as ISO-8859-1 when not UTF-8; map bytes to runes.
		var b strings.Builder
		for _, c := range data {
			b.WriteRune(rune(c))
		}
		data = []byte(b.String())
	}
	lines := strings.Split(strings.ReplaceAll(strings.ReplaceAll(string(data), "\r\n", "\n"), "\r", "\n"), "\n")
	var docs [][]entry
	var out []entry
	total := 0
	for i := 0; i < len(lines); i++ {
		startLine := i + 1
		if lines[i] == "#---" || lines[i] == "!---" {
			docs = append(docs, out)
			out = nil
			continue
		}
		l := strings.TrimLeft(lines[i], " \t\f")
		if l == "" || l[0] == '#' || l[0] == '!' {
			continue
		}
		// join continuation lines
		logical := l
		for endsWithOddBackslashes(logical) && i+1 < len(lines) {
			logical = logical[:len(logical)-1] + strings.TrimLeft(lines[i+1], " \t\f")
			i++
		}
		if endsWithOddBackslashes(logical) {
			logical = logical[:len(logical)-1]
		}
		key, value, err := splitProperty(logical)
		if err != nil {
			return nil, errorf(file, startLine, "", "%v", err)
		}
		if key == "" {
			return nil, errorf(file, startLine, "", "empty property name")
		}
		elems, err := parseName(key)
		if err != nil {
			return nil, errorf(file, startLine, key, "%v", err)
		}
		if total >= maxEntries {
			return nil, errorf(file, startLine, key, "more than %d properties", maxEntries)
		}
		total++
		out = append(out, entry{name: key, elems: elems, value: value, line: startLine})
	}
	return append(docs, out), nil
}

func endsWithOddBackslashes(s string) bool {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

func splitProperty(l string) (key, value string, err error) {
	var kb strings.Builder
	i := 0
	for i < len(l) {
		c := l[i]
		if c == '\\' && i+1 < len(l) {
			r, n, e := unescape(l[i:])
			if e != nil {
				return "", "", e
			}
			kb.WriteString(r)
			i += n
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			break
		}
		kb.WriteByte(c)
		i++
	}
	// skip white space, one separator, white space
	for i < len(l) && (l[i] == ' ' || l[i] == '\t' || l[i] == '\f') {
		i++
	}
	if i < len(l) && (l[i] == '=' || l[i] == ':') {
		i++
	}
	for i < len(l) && (l[i] == ' ' || l[i] == '\t' || l[i] == '\f') {
		i++
	}
	var vb strings.Builder
	for i < len(l) {
		if l[i] == '\\' && i+1 < len(l) {
			r, n, e := unescape(l[i:])
			if e != nil {
				return "", "", e
			}
			vb.WriteString(r)
			i += n
			continue
		}
		vb.WriteByte(l[i])
		i++
	}
	return kb.String(), vb.String(), nil
}

// unescape decodes one backslash escape at the start of s; it returns the text and the
// number of bytes used.
func unescape(s string) (string, int, error) {
	c := s[1]
	switch c {
	case 't':
		return "\t", 2, nil
	case 'n':
		return "\n", 2, nil
	case 'r':
		return "\r", 2, nil
	case 'f':
		return "\f", 2, nil
	case 'u':
		if len(s) < 6 {
			return "", 0, fmt.Errorf("malformed \\uxxxx escape")
		}
		v, err := strconv.ParseUint(s[2:6], 16, 16)
		if err != nil {
			return "", 0, fmt.Errorf("malformed \\uxxxx escape %q", s[:6])
		}
		return string(rune(v)), 6, nil
	}
	_, n := utf8.DecodeRuneInString(s[1:])
	return s[1 : 1+n], 1 + n, nil
}
