package fault

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"text/template"

	"github.com/cbprobe/cbprobe/pgsim/behavior"
	"go.yaml.in/yaml/v3"
)

// MaxRoutes bounds the routes of one stub file.
const MaxRoutes = 1000

// StubRoute answers the requests it matches without any upstream.
type StubRoute struct {
	// Name labels the route in the attempt log and metrics (default "METHOD PATH").
	Name string
	// Method and Path match like a Rule's (path.Match glob, "/**" prefix).
	Method, Path string
	// Status is the HTTP status, 200..599 (default 200).
	Status int
	// Headers are set on every answer.
	Headers http.Header
	// Body is a text/template rendered per request with a StubRequest as data.
	Body *template.Template
	// Latency is the route's own response time (before any injected latency);
	// nil means none.
	Latency behavior.Distribution
	// Line is the route's line in its file.
	Line int
}

func (r StubRoute) label() string {
	if r.Name != "" {
		return r.Name
	}
	return Rule{Method: r.Method, Path: r.Path}.label()
}

// StubRequest is the data a stub body template sees:
//
//	{{.Method}} {{.Path}} {{.Query.Get "orderId"}} {{.Header.Get "X-USER-ID"}}
//	{{.JSON.orderId}} (the request body decoded as JSON; nil when it is not JSON)
//	{{.Body}} (the raw body) {{.Seq}} (1, 2, 3... per fault server) {{json .JSON}}
type StubRequest struct {
	Method string
	Path   string
	Query  url.Values
	Header http.Header
	Body   string
	JSON   any
	Seq    uint64
}

// Stub is a parsed stub route file.
type Stub struct {
	// File is the path the routes came from.
	File string
	// Routes are tried in order; the first match answers.
	Routes []StubRoute
}

// match returns the first route matching the request, or nil.
func (s *Stub) match(method, p string) *StubRoute {
	for i := range s.Routes {
		r := &s.Routes[i]
		if (r.Method == "" || r.Method == "*" || r.Method == method) && matchPath(r.Path, p) {
			return r
		}
	}
	return nil
}

// LoadStub reads a stub route file (see ParseStub).
func LoadStub(path string) (*Stub, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &FieldError{File: path, Msg: fmt.Sprintf("read: %v", err)}
	}
	return ParseStub(path, data)
}

var stubFuncs = template.FuncMap{
	"json": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
}

// ParseStub reads a stub route file:
//
//	routes:
//	  - name: create-payment          # optional label
//	    method: POST                  # optional; * or absent = any
//	    path: /api/v1/payments        # path.Match glob; /prefix/** for a subtree
//	    status: 200                   # default 200
//	    headers: {Content-Type: application/json}
//	    body: |                       # text/template, data is StubRequest
//	      {"orderId":"{{.JSON.orderId}}","seq":{{.Seq}}}
//	    latency: 100ms-500ms          # pgsim's distributions; default none
//
// Every error names the file and line. The file must have at least one route.
func ParseStub(name string, data []byte) (*Stub, error) {
	root, err := parseDoc(data)
	if err != nil {
		return nil, withFile(name, err)
	}
	if root == nil {
		return nil, &FieldError{File: name, Line: 1, Msg: "empty file; want routes: [...]"}
	}
	list := root
	if root.Kind == yaml.MappingNode {
		list = nil
		for i := 0; i+1 < len(root.Content); i += 2 {
			if k := root.Content[i]; k.Value != "routes" {
				return nil, &FieldError{File: name, Line: k.Line, Field: k.Value, Msg: "unknown key (want routes)"}
			}
			list = root.Content[i+1]
		}
		if list == nil {
			return nil, &FieldError{File: name, Line: root.Line, Field: "routes", Msg: "missing"}
		}
	}
	if list.Kind != yaml.SequenceNode {
		return nil, &FieldError{File: name, Line: list.Line, Field: "routes", Msg: "want a list of routes"}
	}
	if len(list.Content) == 0 {
		return nil, &FieldError{File: name, Line: list.Line, Field: "routes", Msg: "no routes"}
	}
	if len(list.Content) > MaxRoutes {
		return nil, &FieldError{File: name, Line: list.Line, Field: "routes", Msg: fmt.Sprintf("%d routes; at most %d", len(list.Content), MaxRoutes)}
	}
	s := &Stub{File: name}
	for i, rn := range list.Content {
		r, err := stubRouteFromNode(rn, fmt.Sprintf("routes[%d]", i))
		if err != nil {
			return nil, withFile(name, err)
		}
		s.Routes = append(s.Routes, r)
	}
	return s, nil
}

var (
	tplLineRE  = regexp.MustCompile(`template: body:(\d+):`)
	tplStartRE = regexp.MustCompile(`started at body:(\d+)`)
)

func stubRouteFromNode(n *yaml.Node, field string) (StubRoute, error) {
	r := StubRoute{Status: http.StatusOK, Headers: http.Header{}, Line: n.Line}
	if n.Kind != yaml.MappingNode {
		return r, nodeErr(n, field, "want a mapping with method, path, status, headers, body, latency")
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		f := field + "." + k.Value
		scalar := func() (string, error) {
			if v.Kind != yaml.ScalarNode {
				return "", nodeErr(v, f, "want a single value")
			}
			return v.Value, nil
		}
		switch k.Value {
		case "name", "method", "path":
			s, err := scalar()
			if err != nil {
				return r, err
			}
			switch k.Value {
			case "name":
				if len(s) > 64 {
					return r, nodeErr(v, f, "longer than 64 characters")
				}
				r.Name = s
			case "method":
				if s != "*" && !validMethod(s) {
					return r, nodeErr(v, f, "%q is not an upper-case HTTP method such as GET or POST (or * for any)", s)
				}
				r.Method = s
			case "path":
				if err := checkPattern(s); err != nil {
					return r, nodeErr(v, f, "%v", err)
				}
				r.Path = s
			}
		case "status":
			s, err := scalar()
			if err != nil {
				return r, err
			}
			code, err := strconv.Atoi(s)
			if err != nil || code < 200 || code > 599 {
				return r, nodeErr(v, f, "%q is not an HTTP status in 200..599", s)
			}
			r.Status = code
		case "headers":
			if v.Kind != yaml.MappingNode {
				return r, nodeErr(v, f, "want a mapping of header names to values")
			}
			for j := 0; j+1 < len(v.Content); j += 2 {
				hk, hv := v.Content[j], v.Content[j+1]
				if hv.Kind != yaml.ScalarNode {
					return r, nodeErr(hv, f+"."+hk.Value, "want a single value")
				}
				if !validHeaderName(hk.Value) || strings.ContainsAny(hv.Value, "\r\n") {
					return r, nodeErr(hk, f+"."+hk.Value, "not a valid header name and value")
				}
				if isHopByHop(hk.Value) || strings.EqualFold(hk.Value, "Content-Length") {
					return r, nodeErr(hk, f+"."+hk.Value, "set by fault itself; leave it out")
				}
				r.Headers.Add(hk.Value, hv.Value)
			}
		case "body":
			s, err := scalar()
			if err != nil {
				return r, err
			}
			t, err := template.New("body").Funcs(stubFuncs).Option("missingkey=zero").Parse(s)
			if err != nil {
				line := v.Line
				m := tplStartRE.FindStringSubmatch(err.Error())
				if m == nil {
					m = tplLineRE.FindStringSubmatch(err.Error())
				}
				if m != nil {
					off, _ := strconv.Atoi(m[1])
					line += off - 1
					if v.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
						line++ // block scalars start on the line after "body: |"
					}
				}
				msg := strings.TrimPrefix(tplLineRE.ReplaceAllString(err.Error(), ""), " ")
				return r, &FieldError{Line: line, Field: f, Msg: "template: " + msg}
			}
			r.Body = t
		case "latency":
			s, err := scalar()
			if err != nil {
				return r, err
			}
			d, err := behavior.ParseDistribution(s)
			if err != nil {
				return r, nodeErr(v, f, "%v", err)
			}
			r.Latency = d
		default:
			return r, nodeErr(k, f, "unknown key (known: name, method, path, status, headers, body, latency)")
		}
	}
	if r.Body == nil {
		r.Body = template.Must(template.New("body").Parse(""))
	}
	return r, nil
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// render executes the route's body template for req into buf, at most limit bytes.
func (r *StubRoute) render(buf *bytes.Buffer, req StubRequest, limit int64) error {
	lw := &limitWriter{buf: buf, left: limit}
	if err := r.Body.Execute(lw, req); err != nil {
		return fmt.Errorf("stub route %q (line %d): %w", r.label(), r.Line, err)
	}
	return nil
}

type limitWriter struct {
	buf  *bytes.Buffer
	left int64
}

func (w *limitWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > w.left {
		return 0, fmt.Errorf("rendered body exceeds the %d-byte cap", w.buf.Len()+int(w.left))
	}
	w.left -= int64(len(p))
	return w.buf.Write(p)
}
