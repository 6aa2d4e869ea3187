// Package images decides which program on this machine a container runs.
// There are no images locally: a container runs its command, and an image
// only matters when the container gives none — then its entrypoint comes
// from a Map (the test app's image is podgate's own `test/testapp`, the gate's
// image and podgate's are this binary, others are mapped with --image
// NAME=PATH, or found in an OCI layout's Store). The command's first word
// is then found as a container runtime finds it (LookPath), and a command
// "podgate" is this binary, wherever it lives. An exec probe or hook that
// names the image's program by its path in the image (`/podgate`) runs the
// program that stands for it here.
package images
