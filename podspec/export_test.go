package podspec

import "k8s.io/apimachinery/pkg/util/validation/field"

// ResolveEnv is resolveEnv for the tests of package podspec_test.
var ResolveEnv = resolveEnv

// Validate is validation.Validate for this package's own tests, which
// cannot import package validation (it imports this one). The external
// tests set it before any test runs (validate_hook_test.go).
var Validate func(*Workload) field.ErrorList
