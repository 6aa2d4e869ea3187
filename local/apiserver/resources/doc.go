// Package resources names the collections the control API serves: group,
// version, plural, kind and URL path, for its routes, discovery and
// errors.
package resources
