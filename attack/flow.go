package attack

import (
	"fmt"
	"net/http"
	"os"
	"strings"

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
