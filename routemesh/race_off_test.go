//go:build !race

package routemesh

const raceEnabled = false
