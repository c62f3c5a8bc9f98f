package attack

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// flowParser walks a flow's YAML nodes into a Flow, noting the line of every
// key for the errors compile finds later.
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
