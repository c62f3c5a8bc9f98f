package attack

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLoadFlowMatchesDefault(t *testing.T) {
	f, err := LoadFlow("testdata/order-and-pay.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The file leaves Content-Type to the default; DefaultFlow states it.
	def := DefaultFlow()
	for i := range def.Steps {
		delete(def.Steps[i].Headers, "Content-Type")
	}
	if diff := cmp.Diff(def, f); diff != "" {
		t.Errorf("testdata flow differs from DefaultFlow (-default +file):\n%s", diff)
	}
}

func TestDefaultFlowCompiles(t *testing.T) {
	steps, err := DefaultFlow().compile("default", nil)
	if err != nil {
		t.Fatalf("DefaultFlow does not compile: %v", err)
	}
	if len(steps) != 2 || steps[0].capture[0].name != "orderId" || steps[1].method != "POST" {
		t.Errorf("unexpected compiled default flow: %+v", steps)
	}
}

func TestParseFlowDefaults(t *testing.T) {
	f, err := ParseFlow("f.yaml", []byte("steps:\n  - url: /a\n  - url: http://h/b\n    body: x\n"))
	if err != nil {
		t.Fatal(err)
	}
	if f.Name != "f.yaml" {
		t.Errorf("Name = %q, want the file name", f.Name)
	}
	steps, err := f.compile("f.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if steps[0].name != "step1" || steps[0].method != "GET" || steps[0].absolute {
		t.Errorf("step 1 = %+v, want step1 GET relative", steps[0])
	}
	if steps[1].name != "step2" || steps[1].method != "POST" || !steps[1].absolute {
		t.Errorf("step 2 = %+v, want step2 POST absolute", steps[1])
	}
	if len(steps[1].headers) != 1 || steps[1].headers[0].key != "Content-Type" || steps[1].headers[0].val.text != "application/json" {
		t.Errorf("step 2 headers = %+v, want the default Content-Type", steps[1].headers)
	}
}

func TestParseFlowErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"not yaml", "steps: [", "f.yaml: parse YAML: yaml: line 1: did not find expected node content"},
		{"empty", "", "f.yaml: empty flow (want a mapping with steps)"},
		{"list at top", "- a\n", "f.yaml:1: flow must be a mapping with name and steps, got a list"},
		{"unknown top key", "name: x\nstep: []\n", "f.yaml:2: step: unknown key (want name, steps)"},
		{"no steps", "name: x\n", "f.yaml:1: steps: missing: a flow needs at least one step"},
		{"steps not list", "steps: {a: b}\n", "f.yaml:1: steps: must be a list of steps, got a mapping"},
		{"steps empty", "steps: []\n", "f.yaml:1: steps: empty: a flow needs at least one step"},
		{"step scalar", "steps:\n  - GET /\n", `f.yaml:2: steps[0]: step must be a mapping with method, url, ..., got scalar "GET /"`},
		{"unknown step key", "steps:\n  - url: /a\n    hedaers: {}\n", "f.yaml:3: steps[0].hedaers: unknown key (want name, method, url, headers, body, capture)"},
		{"missing url", "steps:\n  - method: GET\n", "f.yaml:2: steps[0].url: missing: every step needs a url"},
		{"bad method", "steps:\n  - url: /a\n    method: GE T\n", `f.yaml:3: steps[0].method: bad HTTP method "GE T"`},
		{"ftp url", "steps:\n  - url: ftp://h/a\n", `f.yaml:2: steps[0].url: only http:// and https:// URLs are supported, got "ftp://h/a"`},
		{"url as list", "steps:\n  - url: [a]\n", "f.yaml:2: steps[0].url: must be a string, got a list"},
		{"headers as list", "steps:\n  - url: /a\n    headers: [a]\n", "f.yaml:3: steps[0].headers: must be a mapping of names to strings, got a list"},
		{"header value map", "steps:\n  - url: /a\n    headers:\n      X-A: {b: c}\n", "f.yaml:4: steps[0].headers.X-A: must be a string, got a mapping"},
		{"bad header name", "steps:\n  - url: /a\n    headers:\n      \"X A\": b\n", `f.yaml:4: steps[0].headers.X A: bad header name "X A"`},
		{"bad template", "steps:\n  - url: /a\n    body: '{{.Seq'\n", `f.yaml:3: steps[0].body: bad template 1: unclosed action`},
		{"unknown field", "steps:\n  - url: /a/{{.Sequence}}\n", `f.yaml:2: steps[0].url: template 1:5: <.Sequence>: can't evaluate field Sequence (fields: .Seq, .OrderID, .User, .UserID, .Vars.NAME)`},
		{"var not captured", "steps:\n  - url: /a\n    capture: {id: id}\n  - url: /b/{{.Vars.orderId}}\n",
			`f.yaml:4: steps[1].url: template 1:10: <.Vars.orderId>: map has no entry for key "orderId" (no earlier step captures it)`},
		{"var from same step", "steps:\n  - url: /a/{{.Vars.id}}\n    capture: {id: id}\n",
			`f.yaml:2: steps[0].url: template 1:10: <.Vars.id>: map has no entry for key "id" (no earlier step captures it)`},
		{"range", "steps:\n  - url: /a\n    body: '{{range 99999999999}}x{{end}}'\n", `f.yaml:3: steps[0].body: bad template 1: range is not allowed in flow templates`},
		{"template call", "steps:\n  - url: '/a{{define \"x\"}}y{{end}}{{template \"x\"}}'\n", `f.yaml:2: steps[0].url: bad template 1: template calls are not allowed in flow templates`},
		{"if is fine but range inside is not", "steps:\n  - url: /a\n    body: '{{if .Seq}}{{range 3}}x{{end}}{{end}}'\n", `f.yaml:3: steps[0].body: bad template 1: range is not allowed in flow templates`},
		{"bad capture name", "steps:\n  - url: /a\n    capture: {1x: id}\n", `f.yaml:3: steps[0].capture.1x: variable name "1x" must be letters, digits and _ (not starting with a digit)`},
		{"bad capture path", "steps:\n  - url: /a\n    capture:\n      id: data..key\n", `f.yaml:4: steps[0].capture.id: JSON path "data..key" has an empty segment`},
		{"duplicate header", "steps:\n  - url: /a\n    headers:\n      X-A: b\n      X-A: c\n", "f.yaml:5: steps[0].headers.X-A: duplicate key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseFlow("f.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatalf("ParseFlow = nil error, want %q", tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("error\n got %q\nwant %q", err.Error(), tc.want)
			}
			var fe *FlowError
			if !errors.As(err, &fe) || fe.ExitCode() != 2 {
				t.Errorf("error %T is not a *FlowError with exit code 2", err)
			}
		})
	}
}

func TestLoadFlowMissingFile(t *testing.T) {
	_, err := LoadFlow("testdata/nope.yaml")
	var fe *FlowError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "testdata/nope.yaml: read flow:") {
		t.Fatalf("LoadFlow(missing) = %v, want a *FlowError naming the file", err)
	}
}

func TestExtract(t *testing.T) {
	body := []byte(`{"orderId":"o-1","n":12.50,"ok":true,"data":{"transactionKey":"tk-9"},"items":[{"id":7},{"id":"x"}],"nil":null}`)
	tests := []struct {
		name, path, want, err string
	}{
		{"top string", "orderId", "o-1", ""},
		{"number as written", "n", "12.50", ""},
		{"bool", "ok", "true", ""},
		{"nested", "data.transactionKey", "tk-9", ""},
		{"list index", "items.0.id", "7", ""},
		{"second item", "items.1.id", "x", ""},
		{"object as json", "data", `{"transactionKey":"tk-9"}`, ""},
		{"missing key", "data.nope", "", `no key "nope" at data`},
		{"missing top", "nope", "", `no key "nope" at the top level`},
		{"index out of range", "items.2.id", "", "index 2 out of range at items (length 2)"},
		{"not an index", "items.x", "", `items is a list; "x" is not an index`},
		{"into scalar", "orderId.x", "", "orderId is not an object or list"},
		{"null", "nil", "", "nil is null"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path, err := parsePath(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := extract(body, path)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("extract(%q) error = %v, want %q", tc.path, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("extract(%q) = %q, %v; want %q", tc.path, got, err, tc.want)
			}
		})
	}
	if _, err := extract([]byte("<html>"), []string{"a"}); err == nil || !strings.HasPrefix(err.Error(), "answer is not JSON") {
		t.Errorf("extract(non-JSON) error = %v, want 'answer is not JSON'", err)
	}
}

func FuzzParseFlow(f *testing.F) {
	f.Add([]byte("steps:\n  - url: /a\n    capture: {id: data.id}\n  - url: /b/{{.Vars.id}}\n    body: '{{.OrderID}}'\n"))
	f.Add([]byte("name: x\nsteps: [{url: 'http://h/{{.Seq}}', headers: {A: '{{.UserID}}'}}]\n"))
	f.Add([]byte("steps: [{url: '{{template \"x\"}}'}]"))
	f.Add([]byte("&a [*a]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fl, err := ParseFlow("fuzz.yaml", data)
		if err != nil {
			var fe *FlowError
			if !errors.As(err, &fe) {
				t.Fatalf("error %T is not a *FlowError: %v", err, err)
			}
			return
		}
		if len(fl.Steps) == 0 {
			t.Fatal("accepted a flow without steps")
		}
		if _, err := fl.compile("fuzz.yaml", nil); err != nil {
			t.Fatalf("accepted flow does not compile: %v", err)
		}
	})
}
