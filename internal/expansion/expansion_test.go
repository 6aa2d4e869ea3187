package expansion

import "testing"

func TestExpandFollowsTheKubeletsRules(t *testing.T) {
	vars := MapLookup(map[string]string{"A": "x", "EMPTY": "", "B": "$(A)"})
	for _, tc := range []struct{ name, in, want string }{
		{"a known name becomes its value", "$(A)", "x"},
		{"an empty value is still a value", "[$(EMPTY)]", "[]"},
		{"an unknown name stays as written", "$(NOPE)", "$(NOPE)"},
		{"$$ is an escaped $", "$$(A)", "$(A)"},
		{"values are not expanded again", "$(B)", "$(A)"},
		{"a lone $ stays", "cost $5 and $", "cost $5 and $"},
		{"an unclosed $( stays", "$(A", "$(A"},
		{"several references in one string", "$(A)-$(A)-$(NOPE)", "x-x-$(NOPE)"},
		{"no $ at all is returned as is", "plain", "plain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Expand(tc.in, vars); got != tc.want {
				t.Fatalf("Expand(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// FuzzExpand: expansion with no known names and no $$ is the identity, and
// it never panics.
func FuzzExpand(f *testing.F) {
	for _, s := range []string{"$(A)", "$$", "$(", "a$", "$(A)$(B", "$$$$(x)"} {
		f.Add(s)
	}
	none := func(string) (string, bool) { return "", false }
	f.Fuzz(func(t *testing.T, s string) {
		out := Expand(s, none)
		if !containsDoubleDollar(s) && out != s {
			t.Fatalf("Expand(%q) with no names = %q, want it unchanged", s, out)
		}
	})
}

func containsDoubleDollar(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '$' && s[i+1] == '$' {
			return true
		}
	}
	return false
}
