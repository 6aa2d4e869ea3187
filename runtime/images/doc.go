// Package images decides which program on this machine a container runs.
// There are no images locally: a container runs its command, and an image
// only matters when the container gives none — then its entrypoint comes
// from a Map (the test app's image is podgate's own `testapp`, others are
// mapped with --image NAME=PATH). The command's first word is then found
// as a container runtime finds it (LookPath), and a command "podgate" is
// this binary, wherever it lives.
package images
