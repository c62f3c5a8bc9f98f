package attack

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"text/template"
	"text/template/parse"

	"go.yaml.in/yaml/v3"
)

// Flow is a sequence of HTTP requests run in order as one logical request
// (one Seq, one Result). It is loaded from YAML:
//
//	name: order-and-pay
//	steps:
//	  - name: order
//	    method: POST
//	    url: /api/v1/orders
//	    headers: {X-USER-ID: "{{.UserID}}"}
//	    body: '{"amount":5000}'
//	    capture: {orderId: orderId}
//	  - name: pay
//	    ...
type Flow struct {
	// Name labels the flow.
	Name string
	// Steps run in order; a failing step (transport error, status >= 400 or a
	// failed capture) ends the flow run.
	Steps []Step
}

// Step is one HTTP request of a Flow. URL, header values and Body are
// text/template templates over TemplateData.
type Step struct {
	// Name labels the step in StepResult; defaults to "stepN" (1-based).
	Name string
	// Method is the HTTP method; defaults to GET, or POST when Body is set.
	Method string
	// URL is absolute (http:// or https://) or a path appended to Config.Target.
	URL string
	// Headers are request headers (values are templates). Content-Type
	// defaults to application/json when Body is not empty.
	Headers map[string]string
	// Body is the request body template; empty means no body.
	Body string
	// Capture maps a variable name to a dotted JSON path into this step's
	// answer ("orderId", "data.transactionKey", "items.0.id"); later steps read
	// it as {{.Vars.name}}.
	Capture map[string]string
}

// TemplateData is what step templates see.
type TemplateData struct {
	// Seq is the 1-based request (flow run) number.
	Seq int
	// OrderID is a fresh order id for this flow run: "<run id>-<Seq, 6 digits>".
	OrderID string
	// User is the 1-based user number in sequential mode, 0 in open-model mode.
	User int
	// UserID is "user-<User>" in sequential mode and "cbprobe" in open-model mode.
	UserID string
	// Vars holds values captured by earlier steps of this flow run.
	Vars map[string]string
}

// FlowError is a bad flow definition. Error() reads "file:line: key: msg".
type FlowError struct {
	// File is the flow's file or name.
	File string
	// Line is the 1-based YAML line, 0 when unknown.
	Line int
	// Key is the path of the bad key, e.g. "steps[1].capture.orderId".
	Key string
	// Msg says what is wrong.
	Msg string
}

// Error implements error.
func (e *FlowError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Key != "" {
		b.WriteString(": " + e.Key)
	}
	b.WriteString(": " + e.Msg)
	return b.String()
}

// ExitCode is 2: a bad flow is a configuration error.
func (e *FlowError) ExitCode() int { return 2 }

// LoadFlow reads and parses a flow YAML file.
func LoadFlow(path string) (*Flow, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &FlowError{File: path, Msg: fmt.Sprintf("read flow: %v", err)}
	}
	return ParseFlow(path, data)
}

// ParseFlow parses a flow from YAML; name (a file name) labels errors and is
// the default flow name. Unknown keys, bad templates, bad methods, captures
// with bad paths and templates that read a variable no earlier step captures
// are errors (*FlowError with the line and key).
func ParseFlow(name string, data []byte) (*Flow, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &FlowError{File: name, Msg: fmt.Sprintf("parse YAML: %v", err)}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, &FlowError{File: name, Msg: "empty flow (want a mapping with steps)"}
	}
	p := flowParser{file: name}
	f, err := p.flow(doc.Content[0])
	if err != nil {
		return nil, err
	}
	if f.Name == "" {
		f.Name = name
	}
	if _, err := f.compile(name, p.lines); err != nil {
		return nil, err
	}
	return f, nil
}

// DefaultFlow is the reference service's order + payment flow:
// POST /api/v1/orders {"amount":5000} capturing orderId from
// {"orderId":"..."}, then POST /api/v1/payments with that orderId, card type
// SAMSUNG and card number 1234-5678-9814-1451. Both steps send
// X-USER-ID: {{.UserID}}.
func DefaultFlow() *Flow {
	f := &Flow{
		Name: "order-and-pay",
		Steps: []Step{
			{
				Name:    "order",
				Method:  http.MethodPost,
				URL:     "/api/v1/orders",
				Headers: map[string]string{"X-USER-ID": "{{.UserID}}", "Content-Type": "application/json"},
				Body:    `{"amount":5000}`,
				Capture: map[string]string{"orderId": "orderId"},
			},
			{
				Name:    "pay",
				Method:  http.MethodPost,
				URL:     "/api/v1/payments",
				Headers: map[string]string{"X-USER-ID": "{{.UserID}}", "Content-Type": "application/json"},
				Body:    `{"orderId":"{{.Vars.orderId}}","cardType":"SAMSUNG","cardNo":"1234-5678-9814-1451"}`,
			},
		},
	}
	return f
}

// SingleRequestFlow is a one-step flow sending method to url (absolute or
// relative to Config.Target) with no body.
func SingleRequestFlow(method, url string) (*Flow, error) {
	f := &Flow{Name: method + " " + url, Steps: []Step{{Name: "request", Method: method, URL: url}}}
	if _, err := f.compile("request", nil); err != nil {
		return nil, err
	}
	return f, nil
}

// ---- YAML node walking ----

type flowParser struct {
	file  string
	lines map[string]int // key path -> line, for compile errors
}

func (p *flowParser) errf(n *yaml.Node, key, format string, a ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &FlowError{File: p.file, Line: line, Key: key, Msg: fmt.Sprintf(format, a...)}
}

func (p *flowParser) note(key string, n *yaml.Node) {
	if p.lines == nil {
		p.lines = map[string]int{}
	}
	p.lines[key] = n.Line
}

func (p *flowParser) flow(n *yaml.Node) (*Flow, error) {
	if n.Kind != yaml.MappingNode {
		return nil, p.errf(n, "", "flow must be a mapping with name and steps, got %s", kindName(n))
	}
	f := &Flow{}
	var stepsNode *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "name":
			s, err := p.scalar(v, "name")
			if err != nil {
				return nil, err
			}
			f.Name = s
		case "steps":
			stepsNode = v
		default:
			return nil, p.errf(k, k.Value, "unknown key (want name, steps)")
		}
	}
	if stepsNode == nil {
		return nil, p.errf(n, "steps", "missing: a flow needs at least one step")
	}
	if stepsNode.Kind != yaml.SequenceNode {
		return nil, p.errf(stepsNode, "steps", "must be a list of steps, got %s", kindName(stepsNode))
	}
	if len(stepsNode.Content) == 0 {
		return nil, p.errf(stepsNode, "steps", "empty: a flow needs at least one step")
	}
	for i, sn := range stepsNode.Content {
		st, err := p.step(sn, fmt.Sprintf("steps[%d]", i))
		if err != nil {
			return nil, err
		}
		f.Steps = append(f.Steps, st)
	}
	return f, nil
}

func (p *flowParser) step(n *yaml.Node, key string) (Step, error) {
	var st Step
	if n.Kind != yaml.MappingNode {
		return st, p.errf(n, key, "step must be a mapping with method, url, ..., got %s", kindName(n))
	}
	p.note(key, n)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		sub := key + "." + k.Value
		p.note(sub, v)
		var err error
		switch k.Value {
		case "name":
			st.Name, err = p.scalar(v, sub)
		case "method":
			st.Method, err = p.scalar(v, sub)
		case "url":
			st.URL, err = p.scalar(v, sub)
		case "body":
			st.Body, err = p.scalar(v, sub)
		case "headers":
			st.Headers, err = p.stringMap(v, sub)
		case "capture":
			st.Capture, err = p.stringMap(v, sub)
		default:
			err = p.errf(k, sub, "unknown key (want name, method, url, headers, body, capture)")
		}
		if err != nil {
			return st, err
		}
	}
	return st, nil
}

func (p *flowParser) scalar(n *yaml.Node, key string) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", p.errf(n, key, "must be a string, got %s", kindName(n))
	}
	return n.Value, nil
}

func (p *flowParser) stringMap(n *yaml.Node, key string) (map[string]string, error) {
	if n.Kind != yaml.MappingNode {
		return nil, p.errf(n, key, "must be a mapping of names to strings, got %s", kindName(n))
	}
	m := make(map[string]string, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		sub := key + "." + k.Value
		if k.Kind != yaml.ScalarNode || k.Value == "" {
			return nil, p.errf(k, key, "keys must be non-empty strings")
		}
		if _, dup := m[k.Value]; dup {
			return nil, p.errf(k, sub, "duplicate key")
		}
		s, err := p.scalar(v, sub)
		if err != nil {
			return nil, err
		}
		p.note(sub, v)
		m[k.Value] = s
	}
	return m, nil
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("scalar %q", n.Value)
	case yaml.AliasNode:
		return "an alias"
	default:
		return "nothing"
	}
}

// ---- compilation ----

// compiledStep is a Step with parsed templates; a nil template means the text
// is constant (no "{{").
type compiledStep struct {
	name     string
	method   string
	url      textTemplate
	absolute bool // URL starts with http:// or https://
	headers  []headerTemplate
	// constHeader is the header when no header value is a template (shared,
	// read-only), nil otherwise.
	constHeader http.Header
	body        textTemplate
	// constBody is the body when it is not a template (shared, read-only;
	// nil when empty).
	constBody []byte
	// constant is set when neither the URL, a header value nor the body is
	// a template: every request of the step is the same.
	constant bool
	// fixedURL is the absolute URL when the URL is not a template (set by
	// the engine, which knows Config.Target).
	fixedURL string
	capture  []captureSpec
}

type headerTemplate struct {
	key string // canonical
	raw string // as written, for error keys
	val textTemplate
}

type captureSpec struct {
	name string
	path []string
}

// textTemplate is a constant string or a parsed template.
type textTemplate struct {
	text string
	tmpl *template.Template
}

func (t textTemplate) render(d *TemplateData) (string, error) {
	if t.tmpl == nil {
		return t.text, nil
	}
	var b bytes.Buffer
	if err := t.tmpl.Execute(&b, d); err != nil {
		return "", err
	}
	return b.String(), nil
}

func parseText(name, text string) (textTemplate, error) {
	if !strings.Contains(text, "{{") {
		return textTemplate{text: text}, nil
	}
	t, err := template.New(name).Option("missingkey=error").Parse(text)
	if err != nil {
		return textTemplate{}, err
	}
	for _, tt := range t.Templates() {
		if tt.Tree == nil || tt.Tree.Root == nil {
			continue
		}
		if err := checkNodes(tt.Tree.Root); err != nil {
			return textTemplate{}, err
		}
	}
	return textTemplate{text: text, tmpl: t}, nil
}

// checkNodes rejects loops and template calls: a flow template renders one
// value per request, and a loop (range over a large number) could hang it.
func checkNodes(n parse.Node) error {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if err := checkNodes(c); err != nil {
				return err
			}
		}
	case *parse.RangeNode:
		return fmt.Errorf("%d: range is not allowed in flow templates", n.Line)
	case *parse.TemplateNode:
		return fmt.Errorf("%d: template calls are not allowed in flow templates", n.Line)
	case *parse.IfNode:
		return checkBranch(&n.BranchNode)
	case *parse.WithNode:
		return checkBranch(&n.BranchNode)
	}
	return nil
}

func checkBranch(b *parse.BranchNode) error {
	if err := checkNodes(b.List); err != nil {
		return err
	}
	if b.ElseList != nil {
		return checkNodes(b.ElseList)
	}
	return nil
}

func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for _, r := range m {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

func validIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// compile validates f and returns its steps ready to run. lines maps key
// paths to YAML lines (nil when the flow was not read from YAML).
func (f *Flow) compile(file string, lines map[string]int) ([]compiledStep, error) {
	fail := func(key, format string, a ...any) error {
		return &FlowError{File: file, Line: lineFor(lines, key), Key: key, Msg: fmt.Sprintf(format, a...)}
	}
	if len(f.Steps) == 0 {
		return nil, fail("steps", "empty: a flow needs at least one step")
	}
	compiled := make([]compiledStep, 0, len(f.Steps))
	vars := map[string]string{}
	for i, st := range f.Steps {
		key := fmt.Sprintf("steps[%d]", i)
		cs := compiledStep{name: st.Name, method: strings.ToUpper(st.Method)}
		if cs.name == "" {
			cs.name = fmt.Sprintf("step%d", i+1)
		}
		if cs.method == "" {
			cs.method = http.MethodGet
			if st.Body != "" {
				cs.method = http.MethodPost
			}
		}
		if !validMethod(cs.method) {
			return nil, fail(key+".method", "bad HTTP method %q", st.Method)
		}
		if strings.TrimSpace(st.URL) == "" {
			return nil, fail(key+".url", "missing: every step needs a url")
		}
		lower := strings.ToLower(st.URL)
		cs.absolute = strings.HasPrefix(lower, "http://") || strings.HasPrefix(lower, "https://")
		if strings.Contains(lower, "://") && !cs.absolute {
			return nil, fail(key+".url", "only http:// and https:// URLs are supported, got %q", st.URL)
		}
		var err error
		if cs.url, err = parseText(key+".url", st.URL); err != nil {
			return nil, fail(key+".url", "bad template %s", templateHint(key+".url", err))
		}
		if cs.body, err = parseText(key+".body", st.Body); err != nil {
			return nil, fail(key+".body", "bad template %s", templateHint(key+".body", err))
		}
		hasCT := false
		for _, k := range sortedKeys(st.Headers) {
			hk := key + ".headers." + k
			if !validHeaderName(k) {
				return nil, fail(hk, "bad header name %q", k)
			}
			if http.CanonicalHeaderKey(k) == "Content-Type" {
				hasCT = true
			}
			t, err := parseText(hk, st.Headers[k])
			if err != nil {
				return nil, fail(hk, "bad template %s", templateHint(hk, err))
			}
			cs.headers = append(cs.headers, headerTemplate{key: http.CanonicalHeaderKey(k), raw: k, val: t})
		}
		if !hasCT && st.Body != "" {
			cs.headers = append(cs.headers, headerTemplate{key: "Content-Type", raw: "Content-Type", val: textTemplate{text: "application/json"}})
		}
		// Dry-run every template with the variables earlier steps capture, so a
		// typo (.Var, .Vars.orderID) fails now and not at request time.
		probe := &TemplateData{Seq: 1, OrderID: "probe-000001", User: 1, UserID: "user-1", Vars: vars}
		check := func(k string, t textTemplate) error {
			if _, err := t.render(probe); err != nil {
				return fail(k, "template %s", templateHint(k, err))
			}
			return nil
		}
		if err := check(key+".url", cs.url); err != nil {
			return nil, err
		}
		if err := check(key+".body", cs.body); err != nil {
			return nil, err
		}
		for _, h := range cs.headers {
			if err := check(key+".headers."+h.raw, h.val); err != nil {
				return nil, err
			}
		}
		for _, name := range sortedKeys(st.Capture) {
			ck := key + ".capture." + name
			if !validIdent(name) {
				return nil, fail(ck, "variable name %q must be letters, digits and _ (not starting with a digit)", name)
			}
			path, err := parsePath(st.Capture[name])
			if err != nil {
				return nil, fail(ck, "%v", err)
			}
			cs.capture = append(cs.capture, captureSpec{name: name, path: path})
		}
		for _, c := range cs.capture {
			vars = cloneVarsWith(vars, c.name)
		}
		cs.constHeader = http.Header{}
		for _, h := range cs.headers {
			if h.val.tmpl != nil {
				cs.constHeader = nil
				break
			}
			cs.constHeader[h.key] = []string{h.val.text}
		}
		if cs.body.tmpl == nil && st.Body != "" {
			cs.constBody = []byte(st.Body)
		}
		cs.constant = cs.url.tmpl == nil && cs.body.tmpl == nil && cs.constHeader != nil
		compiled = append(compiled, cs)
	}
	return compiled, nil
}

// lineFor finds the YAML line of key, or of its nearest parent (a missing
// key is reported at its step).
func lineFor(lines map[string]int, key string) int {
	for {
		if l, ok := lines[key]; ok {
			return l
		}
		i := strings.LastIndexByte(key, '.')
		if i < 0 {
			return 0
		}
		key = key[:i]
	}
}

func cloneVarsWith(m map[string]string, name string) map[string]string {
	n := make(map[string]string, len(m)+1)
	for k, v := range m {
		n[k] = v
	}
	n[name] = "probe"
	return n
}

// templateHint shortens text/template's execution error for template name
// ("template: NAME:1:19: executing \"NAME\" at <.X>: msg" -> "1:19: <.X>: msg")
// and says why a Vars key is missing.
func templateHint(name string, err error) string {
	s := strings.TrimPrefix(err.Error(), "template: "+name+":")
	s = strings.Replace(s, `executing "`+name+`" at `, "", 1)
	s = strings.Replace(s, "in type *attack.TemplateData", "(fields: .Seq, .OrderID, .User, .UserID, .Vars.NAME)", 1)
	if strings.Contains(s, "map has no entry for key") {
		return s + " (no earlier step captures it)"
	}
	return s
}

func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if r <= ' ' || r >= 0x7f || strings.ContainsRune("()<>@,;:\\\"/[]?={}", r) {
			return false
		}
	}
	return true
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
