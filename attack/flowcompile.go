package attack

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

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

// compile validates f and returns its steps ready to run. lines maps key
// paths to YAML lines (nil when the flow was not read from YAML).
func (f *Flow) compile(file string, lines map[string]int) ([]compiledStep, error) {
	c := flowCompiler{file: file, lines: lines, vars: map[string]string{}}
	if len(f.Steps) == 0 {
		return nil, c.fail("steps", "empty: a flow needs at least one step")
	}
	compiled := make([]compiledStep, 0, len(f.Steps))
	for i, st := range f.Steps {
		cs, err := c.step(i, st)
		if err != nil {
			return nil, err
		}
		compiled = append(compiled, cs)
	}
	return compiled, nil
}

// flowCompiler compiles a flow's steps in order.
type flowCompiler struct {
	file  string
	lines map[string]int // key path -> YAML line (nil: not read from YAML)
	// vars are the variables the steps compiled so far capture (value
	// "probe"), for the templates' dry run.
	vars map[string]string
}

// fail returns a *FlowError at key.
func (c *flowCompiler) fail(key, format string, a ...any) error {
	return &FlowError{File: c.file, Line: lineFor(c.lines, key), Key: key, Msg: fmt.Sprintf(format, a...)}
}

// step compiles step i. The checks run in the order of the step's parts:
// method, URL, body, headers, a dry run of every template, captures.
func (c *flowCompiler) step(i int, st Step) (compiledStep, error) {
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
		return cs, c.fail(key+".method", "bad HTTP method %q", st.Method)
	}
	if err := c.url(&cs, key, st.URL); err != nil {
		return cs, err
	}
	var err error
	if cs.body, err = parseText(key+".body", st.Body); err != nil {
		return cs, c.fail(key+".body", "bad template %s", templateHint(key+".body", err))
	}
	if cs.headers, err = c.headers(key, st); err != nil {
		return cs, err
	}
	if err := c.dryRun(key, cs); err != nil {
		return cs, err
	}
	if cs.capture, err = c.captures(key, st.Capture); err != nil {
		return cs, err
	}
	for _, cp := range cs.capture {
		c.vars = cloneVarsWith(c.vars, cp.name)
	}
	cs.setConstants(st.Body)
	return cs, nil
}

// url checks and parses the step's URL: absolute http(s) or a path.
func (c *flowCompiler) url(cs *compiledStep, key, url string) error {
	if strings.TrimSpace(url) == "" {
		return c.fail(key+".url", "missing: every step needs a url")
	}
	lower := strings.ToLower(url)
	cs.absolute = strings.HasPrefix(lower, "http://") || strings.HasPrefix(lower, "https://")
	if strings.Contains(lower, "://") && !cs.absolute {
		return c.fail(key+".url", "only http:// and https:// URLs are supported, got %q", url)
	}
	var err error
	if cs.url, err = parseText(key+".url", url); err != nil {
		return c.fail(key+".url", "bad template %s", templateHint(key+".url", err))
	}
	return nil
}

// headers checks and parses the step's headers, in name order, adding
// Content-Type: application/json when the step has a body and sets none.
func (c *flowCompiler) headers(key string, st Step) ([]headerTemplate, error) {
	var hs []headerTemplate
	hasCT := false
	for _, k := range sortedKeys(st.Headers) {
		hk := key + ".headers." + k
		if !validHeaderName(k) {
			return nil, c.fail(hk, "bad header name %q", k)
		}
		if http.CanonicalHeaderKey(k) == "Content-Type" {
			hasCT = true
		}
		t, err := parseText(hk, st.Headers[k])
		if err != nil {
			return nil, c.fail(hk, "bad template %s", templateHint(hk, err))
		}
		hs = append(hs, headerTemplate{key: http.CanonicalHeaderKey(k), raw: k, val: t})
	}
	if !hasCT && st.Body != "" {
		hs = append(hs, headerTemplate{key: "Content-Type", raw: "Content-Type", val: textTemplate{text: "application/json"}})
	}
	return hs, nil
}

// dryRun renders every template of the step with the variables earlier steps
// capture, so a typo (.Var, .Vars.orderID) fails now and not at request time.
func (c *flowCompiler) dryRun(key string, cs compiledStep) error {
	probe := &TemplateData{Seq: 1, OrderID: "probe-000001", User: 1, UserID: "user-1", Vars: c.vars}
	check := func(k string, t textTemplate) error {
		if _, err := t.render(probe); err != nil {
			return c.fail(k, "template %s", templateHint(k, err))
		}
		return nil
	}
	if err := check(key+".url", cs.url); err != nil {
		return err
	}
	if err := check(key+".body", cs.body); err != nil {
		return err
	}
	for _, h := range cs.headers {
		if err := check(key+".headers."+h.raw, h.val); err != nil {
			return err
		}
	}
	return nil
}

// captures checks the step's capture variable names and JSON paths, in name order.
func (c *flowCompiler) captures(key string, capture map[string]string) ([]captureSpec, error) {
	var out []captureSpec
	for _, name := range sortedKeys(capture) {
		ck := key + ".capture." + name
		if !validIdent(name) {
			return nil, c.fail(ck, "variable name %q must be letters, digits and _ (not starting with a digit)", name)
		}
		path, err := parsePath(capture[name])
		if err != nil {
			return nil, c.fail(ck, "%v", err)
		}
		out = append(out, captureSpec{name: name, path: path})
	}
	return out, nil
}

// setConstants precomputes the parts of the step that are not templates:
// the header, the body, and whether every request of the step is the same.
func (cs *compiledStep) setConstants(body string) {
	cs.constHeader = http.Header{}
	for _, h := range cs.headers {
		if h.val.tmpl != nil {
			cs.constHeader = nil
			break
		}
		cs.constHeader[h.key] = []string{h.val.text}
	}
	if cs.body.tmpl == nil && body != "" {
		cs.constBody = []byte(body)
	}
	cs.constant = cs.url.tmpl == nil && cs.body.tmpl == nil && cs.constHeader != nil
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
