package podspec_test

import (
	"github.com/podgate/podgate/podspec"
	"github.com/podgate/podgate/podspec/validation"
)

func init() { podspec.Validate = validation.Validate }
