package contract

import (
	"fmt"
	"strings"
)

// SplitExcludedContainers reads ExcludeContainersAnnotation's value: names
// separated by commas, spaces around them trimmed. Every problem (an empty
// name, a name listed twice) is returned in the order found; names holds
// the distinct non-empty names. An empty value names no container.
func SplitExcludedContainers(v string) (names []string, problems []string) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	seen := map[string]bool{}
	for i, n := range strings.Split(v, ",") {
		n = strings.TrimSpace(n)
		switch {
		case n == "":
			problems = append(problems, fmt.Sprintf("entry %d is empty", i+1))
		case seen[n]:
			problems = append(problems, fmt.Sprintf("%q is listed twice", n))
		default:
			seen[n] = true
			names = append(names, n)
		}
	}
	return names, problems
}
