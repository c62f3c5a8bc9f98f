package fault

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/cbprobe/cbprobe/pgsim/behavior"
	"go.yaml.in/yaml/v3"
)

// Limits on a rule set, so a bad document cannot take unbounded memory.
const (
	MaxRules  = 100 // rules in one set
	MaxPhases = 100 // phases in one rule
)

// Phase is one step of a rule's behaviour over time.
type Phase struct {
	// For is how long the phase lasts; 0 means until the rules change (only
	// allowed on the last phase). After the last phase ends, it stays in effect.
	For time.Duration
	// Behavior applies to the requests the rule matches during the phase.
	Behavior Behavior
}

// Rule scopes a behaviour (or a sequence of phases) to a method and a path
// pattern. The first matching rule applies; a request no rule matches gets the
// default behaviour.
type Rule struct {
	// Name labels the rule in the attempt log, stats and metrics (default
	// "METHOD PATH"). At most 64 characters.
	Name string
	// Method is an HTTP method in upper case; "" or "*" matches any.
	Method string
	// Path is a path.Match glob on the request path ("*" matches within one
	// segment: /api/v1/payments/*), optionally ending in "/**" to match that
	// prefix and everything below it (/api/**); "" matches any path.
	Path string
	// Phases are applied in order from the moment the rule set is installed.
	Phases []Phase
}

// RouteDefault names the default behaviour (requests no rule matches).
const RouteDefault = "default"

// label returns the rule's name for logs and metrics.
func (r Rule) label() string {
	if r.Name != "" {
		return r.Name
	}
	m, p := r.Method, r.Path
	if m == "" {
		m = "*"
	}
	if p == "" {
		p = "/**"
	}
	return m + " " + p
}

// Matches reports whether the rule applies to method and urlPath.
func (r Rule) Matches(method, urlPath string) bool {
	if r.Method != "" && r.Method != "*" && r.Method != method {
		return false
	}
	return matchPath(r.Path, urlPath)
}

func matchPath(pattern, p string) bool {
	if pattern == "" || pattern == "/**" {
		return true
	}
	if prefix, ok := strings.CutSuffix(pattern, "/**"); ok {
		n := strings.Count(prefix, "/")
		// Take as many leading segments of p as the prefix has.
		i, seen := 0, 0
		for ; i < len(p); i++ {
			if p[i] == '/' {
				seen++
				if seen > n {
					break
				}
			}
		}
		ok, _ := path.Match(prefix, p[:i])
		return ok
	}
	ok, _ := path.Match(pattern, p)
	return ok
}

// At returns the behaviour in effect elapsed after the rule set was installed.
func (r Rule) At(elapsed time.Duration) Behavior {
	for _, ph := range r.Phases {
		if ph.For == 0 || elapsed < ph.For {
			return ph.Behavior
		}
		elapsed -= ph.For
	}
	return r.Phases[len(r.Phases)-1].Behavior
}

// Validate checks the rule; errors name the field ("path", "phases[1].for", ...).
func (r Rule) Validate() error {
	if len(r.Name) > 64 {
		return &FieldError{Field: "name", Msg: "longer than 64 characters"}
	}
	if r.Method != "" && r.Method != "*" && !validMethod(r.Method) {
		return &FieldError{Field: "method", Msg: fmt.Sprintf("%q is not an upper-case HTTP method such as GET or POST (or * for any)", r.Method)}
	}
	if err := checkPattern(r.Path); err != nil {
		return &FieldError{Field: "path", Msg: err.Error()}
	}
	if len(r.Phases) == 0 {
		return &FieldError{Field: "behavior", Msg: "a rule needs a behavior or phases"}
	}
	if len(r.Phases) > MaxPhases {
		return &FieldError{Field: "phases", Msg: fmt.Sprintf("%d phases; at most %d", len(r.Phases), MaxPhases)}
	}
	for i, ph := range r.Phases {
		if ph.For < 0 {
			return &FieldError{Field: fmt.Sprintf("phases[%d].for", i), Msg: "negative duration"}
		}
		if ph.For == 0 && i != len(r.Phases)-1 {
			return &FieldError{Field: fmt.Sprintf("phases[%d].for", i), Msg: "only the last phase may last until the rules change (for: 0 or absent)"}
		}
		if err := ph.Behavior.Validate(); err != nil {
			return prefixField(fmt.Sprintf("phases[%d].behavior", i), err)
		}
	}
	return nil
}

func validMethod(m string) bool {
	if m == "" || len(m) > 32 {
		return false
	}
	for _, c := range m {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}

func checkPattern(p string) error {
	if p == "" {
		return nil
	}
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("%q must start with / (path.Match glob, optionally ending in /**)", p)
	}
	core := strings.TrimSuffix(p, "/**")
	if strings.Contains(core, "**") {
		return fmt.Errorf("%q: ** is only allowed as the last segment (/prefix/**)", p)
	}
	if _, err := path.Match(core, "/"); err != nil {
		return fmt.Errorf("%q is not a valid path.Match pattern: %v", p, err)
	}
	return nil
}

// FieldError is a bad value in a rule set, behaviour document or stub file.
// Field is the path of the value ("rules[0].phases[1].behavior.errorRate");
// Line its 1-based line in a YAML file (0 when unknown or for JSON documents).
type FieldError struct {
	File  string // file the value came from ("" for the control API)
	Line  int    // 1-based line, 0 when unknown
	Field string // path of the field, "" for the document as a whole
	Msg   string // what is wrong
}

// Error returns "file:line: field: msg", leaving out what is unknown.
func (e *FieldError) Error() string {
	var sb strings.Builder
	if e.File != "" {
		sb.WriteString(e.File)
		if e.Line > 0 {
			sb.WriteString(":" + strconv.Itoa(e.Line))
		}
		sb.WriteString(": ")
	}
	if e.Field != "" {
		sb.WriteString(e.Field + ": ")
	}
	sb.WriteString(e.Msg)
	return sb.String()
}

// ExitCode returns 2: a bad rule is a usage or configuration error.
func (e *FieldError) ExitCode() int { return 2 }

// prefixField turns a behaviour or rule error into a *FieldError whose field
// path starts with prefix.
func prefixField(prefix string, err error) *FieldError {
	var fe *FieldError
	if errors.As(err, &fe) {
		out := *fe
		out.Field = joinField(prefix, fe.Field)
		return &out
	}
	var be *behavior.FieldError
	if errors.As(err, &be) {
		return &FieldError{Field: joinField(prefix, be.Field), Msg: be.Msg}
	}
	return &FieldError{Field: prefix, Msg: err.Error()}
}

func joinField(prefix, field string) string {
	switch {
	case prefix == "":
		return field
	case field == "":
		return prefix
	case strings.HasPrefix(field, "["):
		return prefix + field
	}
	return prefix + "." + field
}

// ---- decoding (YAML files and JSON documents share one decoder) ----

// parseDoc reads a YAML or JSON document into its root node; nil for an empty document.
func parseDoc(data []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &FieldError{Msg: "not valid YAML/JSON: " + err.Error()}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}

// DecodeRules reads a rule set, either a list of rules or a mapping with a
// "rules" key, from a YAML or JSON document. name is used in errors ("" for
// the control API). Each rule is
//
//   - name: payments              # optional label
//     method: POST                # optional; * or absent = any
//     path: /api/v1/payments/**   # optional path.Match glob, /** = prefix
//     behavior: {errorRate: 0.4}  # a behaviour document (see Behavior), or:
//     phases:
//   - for: 10s
//     behavior: {errorRate: 0}
//   - behavior: {slow: true}  # the last phase holds
//
// Behaviour documents start from NoFaults(); errors name the file, line and field.
func DecodeRules(name string, data []byte) ([]Rule, error) {
	root, err := parseDoc(data)
	if err != nil {
		return nil, withFile(name, err)
	}
	if root == nil {
		return nil, nil
	}
	if root.Kind == yaml.MappingNode {
		var list *yaml.Node
		for i := 0; i+1 < len(root.Content); i += 2 {
			if k := root.Content[i]; k.Value != "rules" {
				return nil, &FieldError{File: name, Line: k.Line, Field: k.Value, Msg: "unknown key (want rules)"}
			}
			list = root.Content[i+1]
		}
		if list == nil {
			return nil, nil
		}
		rules, err := rulesFromNode(list, "rules")
		return rules, withFile(name, err)
	}
	rules, err := rulesFromNode(root, "")
	return rules, withFile(name, err)
}

func withFile(name string, err error) error {
	if err == nil {
		return nil
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		out := *fe
		out.File = name
		return &out
	}
	return &FieldError{File: name, Msg: err.Error()}
}

func nodeErr(n *yaml.Node, field, format string, args ...any) *FieldError {
	return &FieldError{Line: n.Line, Field: field, Msg: fmt.Sprintf(format, args...)}
}

func rulesFromNode(n *yaml.Node, field string) ([]Rule, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, nodeErr(n, field, "want a list of rules")
	}
	if len(n.Content) > MaxRules {
		return nil, nodeErr(n, field, "%d rules; at most %d", len(n.Content), MaxRules)
	}
	var rules []Rule
	for i, rn := range n.Content {
		f := joinField(field, fmt.Sprintf("[%d]", i))
		r, err := ruleFromNode(rn, f)
		if err != nil {
			return nil, err
		}
		rules = append(rules, r)
	}
	return rules, nil
}

func ruleFromNode(n *yaml.Node, field string) (Rule, error) {
	var r Rule
	if n.Kind != yaml.MappingNode {
		return r, nodeErr(n, field, "want a mapping with method, path and behavior or phases")
	}
	var hasBehavior, hasPhases bool
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		f := joinField(field, k.Value)
		switch k.Value {
		case "name", "method", "path":
			if v.Kind != yaml.ScalarNode {
				return r, nodeErr(v, f, "want a string")
			}
			switch k.Value {
			case "name":
				r.Name = v.Value
			case "method":
				r.Method = v.Value
			case "path":
				r.Path = v.Value
			}
		case "behavior":
			b, err := behaviorFromNode(v, f, NoFaults())
			if err != nil {
				return r, err
			}
			hasBehavior = true
			r.Phases = []Phase{{Behavior: b}}
		case "phases":
			if v.Kind != yaml.SequenceNode {
				return r, nodeErr(v, f, "want a list of {for, behavior}")
			}
			if len(v.Content) > MaxPhases {
				return r, nodeErr(v, f, "%d phases; at most %d", len(v.Content), MaxPhases)
			}
			hasPhases = true
			r.Phases = nil
			for j, pn := range v.Content {
				ph, err := phaseFromNode(pn, joinField(f, fmt.Sprintf("[%d]", j)))
				if err != nil {
					return r, err
				}
				r.Phases = append(r.Phases, ph)
			}
		default:
			return r, nodeErr(k, f, "unknown key (known: name, method, path, behavior, phases)")
		}
	}
	if hasBehavior && hasPhases {
		return r, nodeErr(n, joinField(field, "phases"), "give behavior or phases, not both")
	}
	if err := r.Validate(); err != nil {
		fe := prefixField(field, err)
		fe.Line = lineOf(n, strings.TrimPrefix(strings.TrimPrefix(fe.Field, field), "."))
		return r, fe
	}
	return r, nil
}

func phaseFromNode(n *yaml.Node, field string) (Phase, error) {
	var ph Phase
	if n.Kind != yaml.MappingNode {
		return ph, nodeErr(n, field, "want a mapping with for and behavior")
	}
	hasBehavior := false
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		f := joinField(field, k.Value)
		switch k.Value {
		case "for":
			d, err := time.ParseDuration(strings.TrimSpace(v.Value))
			if v.Kind != yaml.ScalarNode || err != nil {
				return ph, nodeErr(v, f, "want a duration such as 10s, got %q", v.Value)
			}
			if d < 0 {
				return ph, nodeErr(v, f, "negative duration %q", v.Value)
			}
			ph.For = d
		case "behavior":
			b, err := behaviorFromNode(v, f, NoFaults())
			if err != nil {
				return ph, err
			}
			ph.Behavior, hasBehavior = b, true
		default:
			return ph, nodeErr(k, f, "unknown key (known: for, behavior)")
		}
	}
	if !hasBehavior {
		return ph, nodeErr(n, joinField(field, "behavior"), "missing")
	}
	return ph, nil
}

// lineOf finds the line of a dotted/indexed field path below n (best effort).
func lineOf(n *yaml.Node, field string) int {
	line := n.Line
	cur := n
	for field != "" && cur != nil {
		var part string
		if strings.HasPrefix(field, "[") {
			end := strings.IndexByte(field, ']')
			if end < 0 {
				break
			}
			idx, err := strconv.Atoi(field[1:end])
			field = strings.TrimPrefix(field[end+1:], ".")
			if err != nil || cur.Kind != yaml.SequenceNode || idx >= len(cur.Content) {
				break
			}
			cur = cur.Content[idx]
			line = cur.Line
			continue
		}
		end := strings.IndexAny(field, ".[")
		if end < 0 {
			part, field = field, ""
		} else {
			part, field = field[:end], strings.TrimPrefix(field[end:], ".")
		}
		if cur.Kind != yaml.MappingNode {
			break
		}
		var next *yaml.Node
		for i := 0; i+1 < len(cur.Content); i += 2 {
			if cur.Content[i].Value == part {
				line = cur.Content[i].Line
				next = cur.Content[i+1]
				break
			}
		}
		cur = next
	}
	return line
}

// stringFields are behaviour fields whose YAML scalars are read as text even
// when they look like numbers ("latency: 0").
var stringFields = map[string]bool{"latency": true, "slowLatency": true, "hangMax": true, "errorTiming": true, "errorBody": true}

// behaviorFromNode decodes a behaviour mapping on top of base with the same
// decoder as the control API, so both accept exactly the same fields.
func behaviorFromNode(n *yaml.Node, field string, base Behavior) (Behavior, error) {
	if n.Kind != yaml.MappingNode {
		return base, nodeErr(n, field, "want a mapping of behaviour fields (%s)", strings.Join(Fields(), ", "))
	}
	doc := make(map[string]any, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if v.Kind == yaml.ScalarNode && stringFields[k.Value] && v.Tag != "!!null" {
			doc[k.Value] = v.Value
			continue
		}
		var x any
		if err := v.Decode(&x); err != nil {
			return base, nodeErr(v, joinField(field, k.Value), "%v", err)
		}
		doc[k.Value] = x
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return base, nodeErr(n, field, "convert to JSON: %v", err)
	}
	b := base
	if err := b.UnmarshalJSON(data); err != nil {
		fe := prefixField(field, err)
		var be *behavior.FieldError
		if errors.As(err, &be) {
			fe.Line = lineOf(n, be.Field)
		}
		return base, fe
	}
	return b, nil
}

// DecodeBehavior reads a behaviour document (JSON or YAML) on top of base.
func DecodeBehavior(base Behavior, data []byte) (Behavior, error) {
	b := base
	if err := b.UnmarshalJSON(data); err == nil {
		return b, nil
	} else if json.Valid(data) {
		return base, err
	}
	root, err := parseDoc(data)
	if err != nil {
		return base, err
	}
	if root == nil {
		return base, &FieldError{Msg: "empty behaviour document"}
	}
	return behaviorFromNode(root, "", base)
}

// LoadRulesFile reads a rule set from a YAML file (see DecodeRules).
func LoadRulesFile(path string) ([]Rule, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &FieldError{File: path, Msg: fmt.Sprintf("read: %v", err)}
	}
	return DecodeRules(path, data)
}

// ruleJSON is the JSON form of a Rule (phases always spelled out).
type ruleJSON struct {
	Name   string      `json:"name,omitempty"`
	Method string      `json:"method,omitempty"`
	Path   string      `json:"path,omitempty"`
	Phases []phaseJSON `json:"phases"`
}

type phaseJSON struct {
	For      string   `json:"for,omitempty"`
	Behavior Behavior `json:"behavior"`
}

// MarshalJSON writes the rule in the form DecodeRules reads.
func (r Rule) MarshalJSON() ([]byte, error) {
	out := ruleJSON{Name: r.Name, Method: r.Method, Path: r.Path, Phases: make([]phaseJSON, len(r.Phases))}
	for i, ph := range r.Phases {
		out.Phases[i].Behavior = ph.Behavior
		if ph.For > 0 {
			out.Phases[i].For = ph.For.String()
		}
	}
	return json.Marshal(out)
}

// methodOf normalises a request method for matching (net/http keeps it as sent).
func methodOf(r *http.Request) string {
	if r.Method == "" {
		return http.MethodGet
	}
	return r.Method
}
