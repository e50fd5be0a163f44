package routemesh

import (
	"sort"

	"github.com/zlink-go/zlink/location"
	"github.com/zlink-go/zlink/routemesh/internal/admission"
)

// wantKind is what automatic discovery wants for one remote MeshNode.
type wantKind uint8

const (
	// wantDial: this node has the smaller RID and dials the peer.
	wantDial wantKind = 1 + iota
	// wantAwait: the peer has the smaller RID; this node expects it to dial.
	wantAwait
	// wantExcluded: both are Object Clients without Channel Server
	// membership; no connection intent (monitoring shows NotRequired).
	wantExcluded
	// wantRemove: the descriptor is gone; drop the intent (a live
	// connection stays until liveness ends it).
	wantRemove
)

func (k wantKind) String() string {
	switch k {
	case wantDial:
		return "dial"
	case wantAwait:
		return "await"
	case wantExcluded:
		return "excluded"
	case wantRemove:
		return "remove"
	default:
		return "invalid"
	}
}

// want is the applied or wanted state of one remote RID.
type want struct {
	kind     wantKind
	gen      uint64
	endpoint string
	security string
}

// change is one topology change the discovery actor hands the mesh actor.
type change struct {
	kind wantKind
	d    location.Descriptor // for wantRemove only RID is set
}

// descIdentity is the part of a descriptor the pair rule reads.
func descIdentity(d *location.Descriptor) admission.Identity {
	role := admission.RoleNone
	switch d.ObjectRole {
	case location.RoleClient:
		role = admission.RoleClient
	case location.RoleServer:
		role = admission.RoleServer
	}
	return admission.Identity{Mesh: d.Mesh, RID: d.RID, Generation: d.Generation,
		ObjectRole: role, ServerChannels: len(d.Servers), SecurityIdentity: d.SecurityIdentity}
}

// planDiscovery computes the wanted set of an automatic node from the live
// descriptors of its mesh: excluded pairs get no intent, otherwise only the
// smaller RID (canonical byte order) dials. Descriptors of the local RID,
// of another mesh or with generation 0 are ignored. Pure.
func planDiscovery(local admission.Identity, descs []location.Descriptor) map[string]want {
	out := make(map[string]want, len(descs))
	for i := range descs {
		d := &descs[i]
		if d.RID == local.RID || d.Mesh != local.Mesh || d.Generation == 0 || d.Endpoint == "" {
			continue
		}
		w := want{gen: d.Generation, endpoint: d.Endpoint, security: d.SecurityIdentity}
		switch {
		case !admission.NeedsConnection(local, descIdentity(d)):
			w.kind = wantExcluded
		case admission.Initiator(local.RID, d.RID) || !d.Discovers:
			// The smaller RID dials; a node without discovery never
			// dials from descriptors, so it is always dialed.
			w.kind = wantDial
		default:
			w.kind = wantAwait
		}
		out[d.RID] = w
	}
	return out
}

// diffDiscovery returns the changes that turn applied into wanted, sorted
// by RID so they are applied in a stable order, one at a time. byRID gives
// the descriptor of every wanted RID.
func diffDiscovery(applied, wanted map[string]want, byRID map[string]location.Descriptor) []change {
	var out []change
	for rid, w := range wanted {
		if a, ok := applied[rid]; ok && a == w {
			continue
		}
		out = append(out, change{kind: w.kind, d: byRID[rid]})
	}
	for rid := range applied {
		if _, ok := wanted[rid]; !ok {
			out = append(out, change{kind: wantRemove, d: location.Descriptor{RID: rid}})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].d.RID < out[j].d.RID })
	return out
}
