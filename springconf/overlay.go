package springconf

import (
	"fmt"
	"sort"
	"strings"
)

// Overlay returns a new File in which props (dotted property keys such as
// "resilience4j.timelimiter.configs.default.timeout-duration", with their values)
// override f, the way Spring's higher-precedence property sources (command-line
// arguments, for example) override application.yml. Keys may use any relaxed form
// and the bracket notation. name labels the overriding source in errors, whose
// keys and messages are checked exactly as in Parse. f is not changed.
func (f *File) Overlay(name string, props map[string]string) (*File, error) {
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(escapeProperty(k, true))
		b.WriteByte('=')
		b.WriteString(escapeProperty(props[k], false))
		b.WriteByte('\n')
	}
	docs, err := parseProperties(name, []byte(b.String()))
	if err != nil {
		return nil, err
	}
	out := &File{name: f.name + " + " + name, format: f.format, props: map[string]*entry{}, lists: map[string][]*entry{},
		keyLines: f.keyLines, profiles: f.profiles}
	out.entries = append([]entry{}, f.entries...)
	for _, d := range docs {
		for _, e := range d {
			e.line = 0 // not a line of the file; errors name the overlay instead
			out.entries = append(out.entries, e)
		}
	}
	out.index(out.entries)
	if err := out.bind(out.entries); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	// Overriding a setting of the file is the point of an overlay, not a duplicate.
	kept := out.notes[:0]
	for _, n := range out.notes {
		if n.ID == "duplicate-setting" && n.Line == 0 {
			continue
		}
		kept = append(kept, n)
	}
	out.notes = kept
	return out, nil
}

// escapeProperty escapes s for a .properties line: backslashes, line breaks and, in
// keys, the separators '=', ':' and blanks.
func escapeProperty(s string, key bool) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case key && (r == '=' || r == ':' || r == ' ' || r == '#' || r == '!'):
			b.WriteByte('\\')
			b.WriteRune(r)
		case !key && i == 0 && r == ' ':
			b.WriteString(`\ `)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
