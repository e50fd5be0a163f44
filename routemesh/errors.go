package routemesh

import (
	"errors"
	"strings"

	"github.com/zlink-go/zlink/fanout"
	"github.com/zlink-go/zlink/internal/zerr"
)

// Configuration errors. Every refusal at Start (or of a runtime weight change)
// is a *ConfigError that matches ErrConfig and one of the specific sentinels
// below with errors.Is.
var (
	ErrConfig             = zerr.ErrConfig
	ErrDuplicateMesh      = errors.New("zlink: MeshName registered twice in this process")
	ErrDuplicateChannel   = errors.New("zlink: ChannelName registered twice on one RouteMesh")
	ErrTopologyConflict   = errors.New("zlink: ChannelName registered on two physical topologies")
	ErrWeightRange        = errors.New("zlink: weight outside 0..10000")
	ErrDirectOnObjectRole = errors.New("zlink: Node-direct handler registered on an Object Client")
	ErrRIDConflict        = errors.New("zlink: fixed RID and RID prefix both set")
	ErrInvalid            = errors.New("zlink: invalid setting")
	ErrUnknownChannel     = errors.New("zlink: no Server role for this ChannelName on this MeshNode")
)

// Sentinels defined elsewhere, kept under their routemesh names.
var (
	// ErrNeedsLocationStore refuses an automatic topology without an
	// explicitly configured Location Store. RouteMesh and fanout share it.
	ErrNeedsLocationStore = zerr.ErrNeedsLocationStore
	// ErrFanoutSourceConflict is fanout.ErrSourceConflict: the fanout rules
	// live in fanout; Topology.Validate applies them.
	ErrFanoutSourceConflict = fanout.ErrSourceConflict
)

// ErrNoChannelRole is returned when a node starts a call on a ChannelName it
// registered no role for (a role is needed to start calls on a channel;
// Node direct needs none).
var ErrNoChannelRole = errors.New("zlink: no Client or Server role for this ChannelName")

// ErrDrainTimeout is returned by Drain when submitted work did not finish
// within the drain timeout. The node stays draining.
var ErrDrainTimeout = errors.New("zlink: drain timed out with work still running")

// ErrNodeFailed ends every pending and later call of a MeshNode in the
// terminal Failed state: one of its supervised actors failed past its
// restart intensity and the node could not be rebuilt.
var ErrNodeFailed = zerr.ErrNodeFailed

// ConfigError names the mesh and channel a configuration refusal is about.
type ConfigError struct {
	Mesh    string // MeshName, "" when the rule is not about one mesh
	Channel string // ChannelName, "" when the rule is not about one channel
	Detail  string // what was wrong, for people
	Err     error  // the specific sentinel (ErrDuplicateMesh, ErrWeightRange, …)
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString(e.Err.Error())
	if e.Mesh != "" {
		b.WriteString(": mesh=")
		b.WriteString(e.Mesh)
	}
	if e.Channel != "" {
		b.WriteString(" channel=")
		b.WriteString(e.Channel)
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

// Is matches ErrConfig as well as the specific sentinel.
func (e *ConfigError) Is(target error) bool { return target == ErrConfig }

// Unwrap returns the specific sentinel.
func (e *ConfigError) Unwrap() error { return e.Err }
