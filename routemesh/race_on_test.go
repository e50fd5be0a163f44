//go:build race

package routemesh

// raceEnabled: the race detector is on; sync.Pool drops items at random
// then, so allocation counts through a pool mean nothing.
const raceEnabled = true
