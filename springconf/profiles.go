package springconf

import (
	"fmt"
	"strings"
)

// Options say how a file is read beyond its own content.
type Options struct {
	// Profiles are the active Spring profiles, as --spring.profiles.active on the command
	// line would set them: they replace the file's spring.profiles.active. Each entry may
	// hold a comma-separated list. Nil means: follow the file's spring.profiles.active, or,
	// when it sets none, Spring's default profile ("default", or spring.profiles.default).
	Profiles []string
}

// Profiles says which profiles were active when the file was read and why.
type Profiles struct {
	// Active are the active profiles after spring.profiles.include and
	// spring.profiles.group were applied, in order.
	Active []string
	// From says where Active came from: "--profile", "spring.profiles.active (line 3)",
	// or "Spring's default profile".
	From string
	// Assumed lists the placeholders resolved to their default values, e.g.
	// "${SPRING_PROFILES_ACTIVE:local} taken as local".
	Assumed []string
}

// document is one YAML document or one #--- section of a .properties file.
type document struct {
	entries []entry
	// activation is spring.config.activate.on-profile (or the legacy spring.profiles) of
	// the document; nil when the document applies to every profile.
	activation *entry
	// exprs is the activation split as Spring's String[] binding does.
	exprs []string
}

// activationOf finds spring.config.activate.on-profile (or the legacy spring.profiles) in a
// document, as a single string or as a list.
func activationOf(doc []entry) (*entry, []string) {
	var first *entry
	var exprs []string
	for i := range doc {
		e := &doc[i]
		elems := e.elems
		if n := len(elems); n > 1 {
			if _, ok := isIndex(elems[n-1]); ok {
				elems = elems[:n-1]
			}
		}
		c := canonKey(elems)
		if c != "spring.config.activate.onprofile" && c != "spring.profiles" {
			continue
		}
		if first == nil {
			first = e
		}
		for _, p := range strings.Split(e.value, ",") {
			if p = strings.TrimSpace(p); p != "" {
				exprs = append(exprs, p)
			}
		}
	}
	return first, exprs
}

// resolvePlaceholder resolves a Spring ${NAME:default} placeholder to its default; ok is false
// when a placeholder has no default (its value depends on the environment).
func resolvePlaceholder(v string) (out string, assumed bool, ok bool) {
	if !strings.Contains(v, "${") {
		return v, false, true
	}
	var b strings.Builder
	rest := v
	for {
		i := strings.Index(rest, "${")
		if i < 0 {
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:i])
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return v, false, false
		}
		inner := rest[i+2 : i+j]
		k := strings.IndexByte(inner, ':')
		if k < 0 {
			return v, false, false
		}
		b.WriteString(inner[k+1:])
		rest = rest[i+j+1:]
	}
	return b.String(), true, true
}

func splitList(vals ...string) []string {
	var out []string
	for _, v := range vals {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// listValue returns a property of the always-active documents as a list: indexed items
// or a comma-separated string, the last document that sets it winning.
func listValue(docs []document, key string) (vals []string, line int, found bool) {
	elems, _ := parseName(key)
	want := canonKey(elems)
	for _, d := range docs {
		if d.activation != nil {
			continue
		}
		var items []string
		itemLine := 0
		for _, e := range d.entries {
			n := len(e.elems)
			if canonKey(e.elems) == want {
				vals, line, found = splitList(e.value), e.line, true
				items = nil
				continue
			}
			if _, ok := isIndex(e.elems[n-1]); ok && n > 1 && canonKey(e.elems[:n-1]) == want {
				if items == nil {
					itemLine = e.line
				}
				items = append(items, splitList(e.value)...)
			}
		}
		if items != nil {
			vals, line, found = items, itemLine, true
		}
	}
	return vals, line, found
}

// activeProfiles computes the active profiles as Spring Boot 2.4+ does: --profile (the
// command line) or else spring.profiles.active of the documents without a profile
// condition, plus spring.profiles.include, expanded through spring.profiles.group; when
// none is active, spring.profiles.default (default "default").
func activeProfiles(docs []document, o Options) Profiles {
	var p Profiles
	var active []string
	switch {
	case o.Profiles != nil:
		active = splitList(o.Profiles...)
		p.From = "--profile"
	default:
		if vals, line, ok := listValue(docs, "spring.profiles.active"); ok {
			for _, v := range vals {
				r, assumed, ok := resolvePlaceholder(v)
				if !ok {
					p.Assumed = append(p.Assumed, fmt.Sprintf("%s has no default and depends on the environment; taken as no profile", v))
					continue
				}
				if assumed {
					p.Assumed = append(p.Assumed, fmt.Sprintf("%s taken as %q", v, r))
				}
				active = append(active, splitList(r)...)
			}
			p.From = fmt.Sprintf("spring.profiles.active (line %d)", line)
		}
	}
	if vals, _, ok := listValue(docs, "spring.profiles.include"); ok {
		active = append(active, vals...)
	}
	if len(active) == 0 {
		active = []string{"default"}
		if vals, _, ok := listValue(docs, "spring.profiles.default"); ok && len(vals) > 0 {
			active = vals
		}
		p.From = "Spring's default profile"
	}
	// spring.profiles.group.<name>: each active profile brings its group's members.
	seen := map[string]bool{}
	var expand func(name string, depth int)
	expand = func(name string, depth int) {
		if seen[name] || depth > 32 {
			return
		}
		seen[name] = true
		p.Active = append(p.Active, name)
		if members, _, ok := listValue(docs, "spring.profiles.group["+name+"]"); ok {
			for _, m := range members {
				expand(m, depth+1)
			}
		} else if members, _, ok := listValue(docs, "spring.profiles.group."+name); ok {
			for _, m := range members {
				expand(m, depth+1)
			}
		}
	}
	for _, a := range active {
		expand(a, 0)
	}
	return p
}

// profilesMatch reports whether any of the profile expressions matches the active
// profiles, as Spring's Profiles.of(...).matches does.
func profilesMatch(exprs []string, active []string) (bool, error) {
	set := map[string]bool{}
	for _, a := range active {
		set[a] = true
	}
	for _, x := range exprs {
		ok, err := matchProfileExpr(x, set)
		if err != nil {
			return false, err
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
}

// matchProfileExpr evaluates one Spring profile expression: names combined with !, & and |
// and parentheses; & and | may not be mixed without parentheses.
func matchProfileExpr(expr string, active map[string]bool) (bool, error) {
	toks := tokenizeProfileExpr(expr)
	if len(toks) == 0 {
		return false, fmt.Errorf("empty profile expression")
	}
	p := &profileParser{toks: toks, active: active}
	v, err := p.or()
	if err != nil {
		return false, fmt.Errorf("malformed profile expression %q: %w", expr, err)
	}
	if p.pos != len(p.toks) {
		return false, fmt.Errorf("malformed profile expression %q", expr)
	}
	return v, nil
}

func tokenizeProfileExpr(s string) []string {
	var out []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	for _, r := range s {
		switch r {
		case '(', ')', '&', '|', '!':
			flush()
			out = append(out, string(r))
		case ' ', '\t':
			flush()
		default:
			cur.WriteRune(r)
		}
	}
	flush()
	return out
}

type profileParser struct {
	toks   []string
	pos    int
	active map[string]bool
}

func (p *profileParser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return ""
}

// or parses a sequence of unary terms joined by one kind of operator.
func (p *profileParser) or() (bool, error) {
	v, err := p.unary()
	if err != nil {
		return false, err
	}
	op := ""
	for p.peek() == "&" || p.peek() == "|" {
		t := p.toks[p.pos]
		if op != "" && t != op {
			return false, fmt.Errorf("'&' and '|' mixed without parentheses")
		}
		op = t
		p.pos++
		w, err := p.unary()
		if err != nil {
			return false, err
		}
		if op == "&" {
			v = v && w
		} else {
			v = v || w
		}
	}
	return v, nil
}

func (p *profileParser) unary() (bool, error) {
	switch t := p.peek(); t {
	case "":
		return false, fmt.Errorf("unexpected end")
	case "!":
		p.pos++
		v, err := p.unary()
		return !v, err
	case "(":
		p.pos++
		v, err := p.or()
		if err != nil {
			return false, err
		}
		if p.peek() != ")" {
			return false, fmt.Errorf("missing ')'")
		}
		p.pos++
		return v, nil
	case ")", "&", "|":
		return false, fmt.Errorf("unexpected %q", t)
	default:
		p.pos++
		return p.active[t], nil
	}
}
