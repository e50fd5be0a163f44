package supervisor

import (
	"fmt"
	"strconv"
)

// State is an actor's lifecycle state as shown in the tree.
type State uint8

const (
	// Starting: spawned, Started not yet handled.
	Starting State = 1 + iota
	// Running: Started handled, processing messages.
	Running
	// Restarting: failed and being restarted (possibly waiting for backoff).
	Restarting
	// Stopping: stop requested, children and mailbox winding down.
	Stopping
	// Stopped: terminated.
	Stopped
	// Failed: its supervisor gave up on it (restarts past the intensity
	// limit, or an unrecoverable error). Terminal: it stays in the tree
	// with its last failure, so the failure is visible, until the path is
	// spawned again.
	Failed
)

var stateNames = [...]string{"", "starting", "running", "restarting", "stopping", "stopped", "failed"}

// String returns the lower-case word for s.
func (s State) String() string {
	if s >= Starting && s <= Failed {
		return stateNames[s]
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

// MarshalText encodes s as its lower-case word.
func (s State) MarshalText() ([]byte, error) {
	if s < Starting || s > Failed {
		return nil, fmt.Errorf("zlink: invalid state %d", uint8(s))
	}
	return []byte(stateNames[s]), nil
}

// UnmarshalText decodes a lower-case state word.
func (s *State) UnmarshalText(b []byte) error {
	for i := Starting; i <= Failed; i++ {
		if stateNames[i] == string(b) {
			*s = i
			return nil
		}
	}
	return fmt.Errorf("zlink: unknown state %q", b)
}

// Kind is a supervision strategy kind.
type Kind uint8

const (
	// OneForOne restarts only the failing child.
	OneForOne Kind = 1 + iota
	// AllForOne restarts all children of the supervisor when one fails.
	AllForOne
)

// String returns "one_for_one" or "all_for_one".
func (k Kind) String() string {
	switch k {
	case OneForOne:
		return "one_for_one"
	case AllForOne:
		return "all_for_one"
	default:
		return "kind(" + strconv.Itoa(int(k)) + ")"
	}
}
