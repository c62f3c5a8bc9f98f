package attack

import (
	"bytes"
	"fmt"
	"strings"
	"text/template"
	"text/template/parse"
)

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
