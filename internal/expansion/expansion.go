// Package expansion expands $(VAR) references the way Kubernetes does in a
// container's command, args and env values, and in exec probe commands.
// The node agent and the probe package share it, so both expand alike.
package expansion

import "strings"

// Expand expands $(NAME) in s with the kubelet's rules: a name lookup knows
// becomes its value, an unknown one stays as written; $$ is an escaped $; a
// $ before anything else, or an unclosed $(, stays as written. There is no
// shell: nothing else is interpreted.
func Expand(s string, lookup func(name string) (string, bool)) string {
	if strings.IndexByte(s, '$') < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch next := s[i+1]; next {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString("$(")
				i++
				continue
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
			b.WriteByte(next)
			i++
		}
	}
	return b.String()
}

// MapLookup looks names up in a map.
func MapLookup(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}
