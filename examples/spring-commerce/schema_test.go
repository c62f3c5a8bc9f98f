package springcommerce

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// schema is a set of lines, each one fact about an output's shape, e.g.
// "/actuator/circuitbreakers circuitBreakers.<name>.failureRate: percent".
type schema map[string]bool

func (s schema) add(line string) { s[line] = true }

func (s schema) merge(o schema) {
	for l := range o {
		s[l] = true
	}
}

// diffSchemas returns the lines only in a and only in b, sorted; lines matched by an allowed
// prefix are left out.
func diffSchemas(a, b schema, allowed func(string) bool) (onlyA, onlyB []string) {
	for l := range a {
		if !b[l] && !allowed(l) {
			onlyA = append(onlyA, l)
		}
	}
	for l := range b {
		if !a[l] && !allowed(l) {
			onlyB = append(onlyB, l)
		}
	}
	sort.Strings(onlyA)
	sort.Strings(onlyB)
	return onlyA, onlyB
}

var (
	percentRE = regexp.MustCompile(`^-?\d+\.\d+(E-?\d+)?%$`)
	// ZonedDateTime.toString(): date, time with optional seconds and fraction, offset, optional [zone].
	zonedRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{3}|\.\d{6}|\.\d{9})?)?(Z|[+-]\d{2}:\d{2})(\[[^\]]+\])?$`)
)

// valueType names a JSON value's type, with strings split into the formats cbprobe parses.
func valueType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		if strings.ContainsAny(x.String(), ".eE") {
			return "number"
		}
		return "integer"
	case string:
		switch {
		case percentRE.MatchString(x):
			return "percent"
		case zonedRE.MatchString(x):
			return "zoned-date-time"
		}
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// enumKeys are fields whose values are enum names: their values are part of the shape.
var enumKeys = map[string]bool{"type": true, "state": true, "stateTransition": true, "status": true, "currentState": true, "code": true}

// jsonSchema flattens a JSON document into "endpoint path: type" lines. Object keys equal to
// one of names become <name>; array elements become [] (event arrays [type=X], so each event
// type's fields are listed); enum fields add "= VALUE" lines.
func jsonSchema(endpoint string, body []byte, names []string) (schema, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%s: not JSON: %w (body %.200q)", endpoint, err, body)
	}
	s := schema{}
	isName := func(k string) bool {
		for _, n := range names {
			if k == n {
				return true
			}
		}
		return false
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		s.add(fmt.Sprintf("%s %s: %s", endpoint, orRoot(path), valueType(v)))
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				seg := k
				if isName(k) {
					seg = "<name>"
				}
				p := seg
				if path != "" {
					p = path + "." + seg
				}
				walk(p, c)
			}
		case []any:
			for _, c := range x {
				seg := path + "[]"
				if m, ok := c.(map[string]any); ok {
					if t, ok := m["type"].(string); ok {
						seg = fmt.Sprintf("%s[type=%s]", path, t)
					}
				}
				walk(seg, c)
			}
		case string:
			last := path[strings.LastIndex(path, ".")+1:]
			if enumKeys[last] {
				s.add(fmt.Sprintf("%s %s = %s", endpoint, path, x))
			}
			if isName(x) {
				s.add(fmt.Sprintf("%s %s = <name>", endpoint, path))
			}
		}
	}
	walk("", v)
	return s, nil
}

func orRoot(p string) string {
	if p == "" {
		return "."
	}
	return p
}

// promSchema lists, for every resilience4j_* family: its TYPE, its HELP, its label keys and
// the values of every label but name (instance names become <name>).
func promSchema(body []byte, names []string) (schema, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("parse /actuator/prometheus: %w", err)
	}
	s := schema{}
	for name, f := range fams {
		if !strings.HasPrefix(name, "resilience4j_") {
			continue
		}
		s.add(fmt.Sprintf("prometheus %s TYPE %s", name, strings.ToLower(f.GetType().String())))
		s.add(fmt.Sprintf("prometheus %s HELP %s", name, f.GetHelp()))
		for _, m := range f.GetMetric() {
			var keys []string
			for _, l := range m.GetLabel() {
				keys = append(keys, l.GetName())
				if l.GetName() == "name" {
					continue
				}
				v := l.GetValue()
				for _, n := range names {
					if v == n {
						v = "<name>"
					}
				}
				s.add(fmt.Sprintf("prometheus %s label %s=%q", name, l.GetName(), v))
			}
			sort.Strings(keys)
			s.add(fmt.Sprintf("prometheus %s labels {%s}", name, strings.Join(keys, ",")))
		}
	}
	return s, nil
}
