package podctl

import (
	"errors"
	"slices"
	"strconv"
	"testing"
)

func TestDeleteFollowsKubectlsGraceRules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		graceSet      bool
		grace         int64
		now, force    bool
		want          string // the grace period sent; "" for the pod's own
		wantWarning   bool
		wantUsageHint string
	}{
		{"nothing set keeps the pod's own", false, 0, false, false, "", false, ""},
		{"--grace-period is sent", true, 5, false, false, "5", false, ""},
		{"--grace-period -1 is the pod's own", true, -1, false, false, "", false, ""},
		{"--now is one second", false, 0, true, false, "1", false, ""},
		{"--grace-period 0 without --force is one second", true, 0, false, false, "1", false, ""},
		{"--force alone kills at once, with a warning", false, 0, false, true, "0", true, ""},
		{"--force with --grace-period 0 kills at once", true, 0, false, true, "0", true, ""},
		{"--force with a grace period keeps it", true, 3, false, true, "3", false, ""},
		{"--now with --grace-period is a usage error", true, 5, true, false, "", false, "--now and --grace-period cannot be specified together"},
		{"a grace period below -1 is a usage error", true, -2, false, false, "", false, "--grace-period -2: must be -1 (the pod's own) or more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts, warning, err := deleteOptions(tc.graceSet, tc.grace, tc.now, tc.force)
			if tc.wantUsageHint != "" {
				var ue *UsageError
				if !errors.As(err, &ue) || err.Error() != tc.wantUsageHint {
					t.Fatalf("err = %v, want the usage error %q", err, tc.wantUsageHint)
				}
				return
			}
			got := ""
			if opts.GracePeriodSeconds != nil {
				got = strconv.FormatInt(*opts.GracePeriodSeconds, 10)
			}
			if err != nil || got != tc.want || (warning != "") != tc.wantWarning {
				t.Errorf("grace %q, warning %q, err %v; want %q, warning %v", got, warning, err, tc.want, tc.wantWarning)
			}
		})
	}
}

func TestPodArguments(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		args    []string
		want    []string
		wantErr string
	}{
		{"pod NAME...", []string{"pod", "a", "b"}, []string{"a", "b"}, ""},
		{"the aliases", []string{"po", "a"}, []string{"a"}, ""},
		{"pod/NAME...", []string{"pod/a", "pods/b"}, []string{"a", "b"}, ""},
		{"nothing", nil, nil, "you must specify pods to delete: delete pod NAME"},
		{"a type without names", []string{"pod"}, nil, "you must name the pods to delete: delete pod NAME"},
		{"both forms at once", []string{"pod", "pod/a"}, nil, `"pod/a": there is no need to specify a resource type as a separate argument when passing arguments in resource/name form`},
		{"another type", []string{"svc", "a"}, nil, `"svc": podgate deletes pods only: delete pod NAME`},
		{"another type in type/name form", []string{"ksvc/a"}, nil, `"ksvc/a": podgate deletes pods only: delete pod/NAME`},
		{"no name after the slash", []string{"pod/"}, nil, `"pod/": a pod name is required`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := podNames(tc.args)
			if tc.wantErr != "" {
				var ue *UsageError
				if !errors.As(err, &ue) || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want the usage error %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("podNames(%q) = %q, %v; want %q", tc.args, got, err, tc.want)
			}
		})
	}
}

func TestRequestsThatBreakTheRulesAreUsageErrors(t *testing.T) {
	t.Parallel()
	ok := GetRequest{Args: []string{"pods"}, Namespace: "default"}
	for _, tc := range []struct {
		name    string
		check   func() error
		wantErr string // "" for a valid request
	}{
		{"get pods", ok.Check, ""},
		{"get by an alias", GetRequest{Args: []string{"ksvc", "hello"}, Namespace: "default"}.Check, ""},
		{"get without a type", GetRequest{Namespace: "default"}.Check, "you must specify the type of resource to get: pods, events, endpoints, services"},
		{"get an unknown type", GetRequest{Args: []string{"nodes"}, Namespace: "default"}.Check,
			`the server doesn't have a resource type "nodes" (podgate serves pods, events, endpoints, services)`},
		{"get with a bad namespace", GetRequest{Args: []string{"pods"}, Namespace: "Not_A_Label"}.Check, `-n "Not_A_Label": `},
		{"get with a malformed label selector", GetRequest{Args: []string{"pods"}, Namespace: "default", LabelSelector: "a=(b"}.Check, `-l "a=(b": `},
		{"get all namespaces by name", GetRequest{Args: []string{"pods", "a"}, Namespace: "default", AllNamespaces: true}.Check,
			"a resource cannot be retrieved by name across all namespaces"},
		{"logs of one pod", LogsRequest{Args: []string{"pod/web"}, Namespace: "default", Tail: -1}.Check, ""},
		{"logs of two pods", LogsRequest{Args: []string{"a", "b"}, Namespace: "default", Tail: -1}.Check, "logs takes one pod: logs POD [-c CONTAINER]"},
		{"logs of another type", LogsRequest{Args: []string{"ksvc/hello"}, Namespace: "default", Tail: -1}.Check, `"ksvc/hello": podgate prints logs of pods only`},
		{"logs with a tail below -1", LogsRequest{Args: []string{"web"}, Namespace: "default", Tail: -2}.Check, "--tail -2: must be -1 (all lines) or more"},
		{"delete with a bad namespace", DeleteRequest{Args: []string{"pod", "a"}, Namespace: "-x"}.Check, `-n "-x": `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.check()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("err = %v, want none", err)
				}
				return
			}
			var ue *UsageError
			if !errors.As(err, &ue) || len(err.Error()) < len(tc.wantErr) || err.Error()[:len(tc.wantErr)] != tc.wantErr {
				t.Fatalf("err = %v, want a usage error starting %q", err, tc.wantErr)
			}
		})
	}
}
