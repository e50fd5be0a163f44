package location

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// ObjectRole is a MeshNode's role for Spots. The zero value is
// invalid.
type ObjectRole uint8

const (
	// RoleNone: the node neither calls nor hosts Spots.
	RoleNone ObjectRole = 1 + iota
	// RoleClient: the node calls Spots but never hosts one.
	RoleClient
	// RoleServer: the node hosts Spots and can call them.
	RoleServer
)

func (r ObjectRole) String() string {
	switch r {
	case RoleNone:
		return "None"
	case RoleClient:
		return "Client"
	case RoleServer:
		return "Server"
	default:
		return fmt.Sprintf("ObjectRole(%d)", uint8(r))
	}
}

// Valid reports whether r is one of the defined roles.
func (r ObjectRole) Valid() bool { return r >= RoleNone && r <= RoleServer }

// Descriptor is a MeshNode descriptor, written by its owner after
// the ROUTER has bound and kept alive by renewing its TTL lease.
type Descriptor struct {
	Mesh string // MeshName; must not contain '{' or '}'
	RID  string // Routing ID, unique within the mesh
	// Generation identifies one lifecycle of the node: non-zero, new on
	// every start, compared for equality only.
	Generation uint64
	// Revision is the version of the weight information within a
	// generation: >= 1, increases on every change.
	Revision uint64
	Endpoint string            // actual bound endpoint, e.g. "tcp://10.0.0.5:7001"
	Servers  map[string]uint16 // Server ChannelName → weight (0..10000)
	// ObjectRole must be set (RoleNone, RoleClient or RoleServer).
	ObjectRole ObjectRole
	// PlacementWeight weights rendezvous placement of Spots on Object
	// Servers, independent of channel weights.
	PlacementWeight  uint32
	SecurityIdentity string // trust profile identity; never the RID
	Protocol         uint16 // protocol version
	Draining         bool
	// Discovers is true when the node runs automatic discovery and so
	// dials the nodes whose RID sorts after its own. A node that does not
	// (manual topology) never dials from descriptors: automatic nodes dial
	// it, whatever the order of the RIDs.
	Discovers bool
	// Kinds lists the Spot kinds an Object Server hosts, sorted, each
	// 1..256 bytes without ':', at most 64, no duplicates. nil means the
	// writer does not say (a version before kinds per Object Server, or an
	// Object Server without the Spot runtime): readers take such a server
	// as hosting every kind, as every Object Server did then. A non-nil
	// empty list: it hosts none. Stored only when non-nil, so a reader of
	// an older version skips it.
	Kinds []string
}

// Hosts reports whether the descriptor's node hosts Spots of kind: an
// Object Server that lists kind, or that lists none at all (Kinds nil).
// kind "" asks whether it hosts Spots at all (any Object Server).
func (d Descriptor) Hosts(kind string) bool {
	if d.ObjectRole != RoleServer {
		return false
	}
	return d.Kinds == nil || kind == "" || slices.Contains(d.Kinds, kind)
}

// Clone returns a deep copy of d (the Servers map and Kinds are copied;
// a nil Kinds stays nil, an empty one empty).
func (d Descriptor) Clone() Descriptor {
	if d.Servers != nil {
		d.Servers = maps.Clone(d.Servers)
	}
	if d.Kinds != nil {
		d.Kinds = append(make([]string, 0, len(d.Kinds)), d.Kinds...)
	}
	return d
}

func (d Descriptor) validate() error {
	if err := validMesh(d.Mesh); err != nil {
		return err
	}
	if len(d.RID) > maxNameLen || len(d.Endpoint) > maxEndpointLen || len(d.SecurityIdentity) > maxEndpointLen {
		return invalidf("descriptor %.64s/%.64s: RID, endpoint or security identity too long", d.Mesh, d.RID)
	}
	if d.RID == "" {
		return invalidf("descriptor of mesh %q: empty RID", d.Mesh)
	}
	if d.Generation == 0 {
		return invalidf("descriptor %s/%s: generation 0", d.Mesh, d.RID)
	}
	if d.Revision == 0 {
		return invalidf("descriptor %s/%s: revision 0", d.Mesh, d.RID)
	}
	if !d.ObjectRole.Valid() {
		return invalidf("descriptor %s/%s: object role %v", d.Mesh, d.RID, d.ObjectRole)
	}
	if len(d.Servers) > maxServers {
		return invalidf("descriptor %s/%s: %d servers, more than %d", d.Mesh, d.RID, len(d.Servers), maxServers)
	}
	for name, w := range d.Servers {
		if name == "" || len(name) > maxNameLen || w > maxServerWeight {
			return invalidf("descriptor %s/%s: server %.64q weight %d", d.Mesh, d.RID, name, w)
		}
	}
	return validKinds(d)
}

// validKinds checks a descriptor's Spot kinds: at most maxKinds, each a
// valid Spot kind name, sorted without duplicates.
func validKinds(d Descriptor) error {
	if len(d.Kinds) > maxKinds {
		return invalidf("descriptor %s/%s: %d kinds, more than %d", d.Mesh, d.RID, len(d.Kinds), maxKinds)
	}
	for i, k := range d.Kinds {
		if k == "" || len(k) > maxNameLen || strings.Contains(k, ":") {
			return invalidf("descriptor %s/%s: spot kind %.64q", d.Mesh, d.RID, k)
		}
		if i > 0 && d.Kinds[i-1] >= k {
			return invalidf("descriptor %s/%s: spot kinds not sorted or listed twice (%.64q)", d.Mesh, d.RID, k)
		}
	}
	return nil
}

// Publisher is a classic fanout publisher descriptor. It lives in
// its own namespace keyed by fanout ChannelName and never mixes with MeshNode
// descriptors.
type Publisher struct {
	Channel    string // fanout ChannelName; must not contain '{' or '}'
	RID        string // publisher lifecycle RID
	Generation uint64 // non-zero
	Endpoint   string // bound PUB endpoint; required
}

func (p Publisher) validate() error {
	if err := validChannel(p.Channel); err != nil {
		return err
	}
	if len(p.RID) > maxNameLen || len(p.Endpoint) > maxEndpointLen {
		return invalidf("publisher %.64s/%.64s: RID or endpoint too long", p.Channel, p.RID)
	}
	if p.RID == "" {
		return invalidf("publisher of channel %q: empty RID", p.Channel)
	}
	if p.Generation == 0 {
		return invalidf("publisher %s/%s: generation 0", p.Channel, p.RID)
	}
	if p.Endpoint == "" {
		return invalidf("publisher %s/%s: empty endpoint", p.Channel, p.RID)
	}
	return nil
}

// Ownership is a Spot ownership record. It is valid only while the
// owner's Spot lease (Mesh, OwnerRID, OwnerGeneration) lives; the Spot
// directory stores it without looking at the lease (see SpotDirectory).
// Epoch is the fencing token: it increases on every change of owner and
// never goes back, also across a release. A record without an owner (a
// Spot never claimed, or released) has an empty OwnerRID and
// OwnerGeneration 0; its Epoch is 0 if never claimed, else the last one.
type Ownership struct {
	Kind            string // Spot kind; must not contain ':'
	ID              string // Spot global ID
	Mesh            string // must not contain ':' (nor '{', '}')
	OwnerRID        string
	OwnerGeneration uint64
	Epoch           uint64
}

// Owned reports whether the record names an owner.
func (o Ownership) Owned() bool { return o.OwnerRID != "" }

// validateSpot checks the Spot's name. A mesh name with ':' is refused
// here (and only here): it would make the key of (mesh "a:b", kind "c")
// the key of (mesh "a", kind "b", ID "c:...").
func (o Ownership) validateSpot() error {
	if err := validSpotMesh(o.Mesh); err != nil {
		return err
	}
	if o.Kind == "" || len(o.Kind) > maxNameLen || strings.Contains(o.Kind, ":") {
		return invalidf("spot kind %.64q", o.Kind)
	}
	if o.ID == "" {
		return invalidf("spot %s: empty id", o.Kind)
	}
	return nil
}

// validateOwner checks the Spot's name, an owner and an epoch in
// 1..maxEpoch.
func (o Ownership) validateOwner() error {
	if err := o.validateSpot(); err != nil {
		return err
	}
	if err := validHolder(o.OwnerRID, o.OwnerGeneration); err != nil {
		return fmt.Errorf("spot %s/%s: %w", o.Kind, o.ID, err)
	}
	if o.Epoch == 0 || o.Epoch > maxEpoch {
		return invalidf("spot %s/%s: epoch %d outside 1..%d", o.Kind, o.ID, o.Epoch, uint64(maxEpoch))
	}
	return nil
}

// validHolder checks an owner: a RID of 1..maxNameLen bytes and a non-zero
// generation.
func validHolder(rid string, gen uint64) error {
	if rid == "" || len(rid) > maxNameLen || gen == 0 {
		return invalidf("owner %.64q generation %d", rid, gen)
	}
	return nil
}

func validSpotMesh(mesh string) error {
	if err := validMesh(mesh); err != nil {
		return err
	}
	if strings.Contains(mesh, ":") {
		return invalidf("mesh name %.64q: a mesh with Spots must not contain ':'", mesh)
	}
	return nil
}

func validMesh(mesh string) error {
	if mesh == "" || len(mesh) > maxNameLen || strings.ContainsAny(mesh, "{}") {
		return invalidf("mesh name %.64q", mesh)
	}
	return nil
}

func validChannel(channel string) error {
	if channel == "" || len(channel) > maxNameLen || strings.ContainsAny(channel, "{}") {
		return invalidf("fanout channel %.64q", channel)
	}
	return nil
}

func validTTL(ttl time.Duration) error {
	if ttl < time.Millisecond {
		return invalidf("ttl %v below 1ms", ttl)
	}
	return nil
}

// EventKind says what happened to a descriptor.
type EventKind uint8

const (
	// EventPut: a descriptor appeared or changed.
	EventPut EventKind = 1 + iota
	// EventDelete: a descriptor was deleted or its lease expired.
	EventDelete
)

func (k EventKind) String() string {
	switch k {
	case EventPut:
		return "Put"
	case EventDelete:
		return "Delete"
	default:
		return fmt.Sprintf("EventKind(%d)", uint8(k))
	}
}

// Event is a hint that something changed for (Mesh, RID). Consumers re-read
// the descriptor (GetDescriptor or ListDescriptors); events may be coalesced
// per RID, and a lost push is recovered by the store's polling.
type Event struct {
	Kind EventKind
	Mesh string
	RID  string
}

// MeshRevision names a state of a mesh's descriptors, the way a cluster
// map carries a revision: Seq counts the changes (a descriptor appeared,
// changed, was deleted or expired) in the change log named Epoch. A store
// that lost its change log (an empty restart) starts a new epoch, so a
// reader never mistakes a new log's revision for one it has read. The
// zero value is "nothing read yet". Compared for equality; Seq orders
// revisions of one epoch only.
type MeshRevision struct {
	Epoch string
	Seq   uint64
}

// IsZero reports whether r is the zero revision.
func (r MeshRevision) IsZero() bool { return r == MeshRevision{} }

func (r MeshRevision) String() string { return fmt.Sprintf("%s/%d", r.Epoch, r.Seq) }

// DescriptorChanges is the answer of Store.DescriptorChanges: what changed
// in a mesh between the revision asked about and Revision.
type DescriptorChanges struct {
	// Revision is the revision the answer brings the reader to.
	Revision MeshRevision
	// Full: the store could not say what changed since the revision asked
	// about; Put holds every live descriptor of the mesh, Gone is empty,
	// and the reader replaces its view with Put.
	Full bool
	// Put holds the current descriptors of the RIDs that appeared or
	// changed since, sorted by RID.
	Put []Descriptor
	// Gone holds the RIDs deleted or expired since (or whose record can no
	// longer be read), sorted.
	Gone []string
}
