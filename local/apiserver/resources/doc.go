// Package resources names the collections the control API serves — group,
// version, plural, kind and URL path — shared by the server (package api)
// and its client (package apiclient), so neither imports the other.
package resources
