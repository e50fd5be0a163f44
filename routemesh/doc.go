// Package routemesh is the RouteMesh runtime: one MeshNode per MeshName per
// process (SPEC §2–9). It owns the node's ROUTER socket, the mesh actor
// (handshakes through the pure internal/handshake and internal/admission
// machines, pipes, manual
// and automatic connection intents, the ready-link table), one peer actor
// per ready connection (liveness through internal/liveness, control
// envelopes), channel owners and weighted selection (internal/selection),
// drain and shutdown.
//
// With a Location Store (Deps.Store) the node also owns its descriptor
// lease (descriptor.go: published after bind, renewed every TTL/3,
// republished on every revision change, deleted on Stop) and, for
// automatic nodes, the discovery actor (discovery.go), the node's single
// reconfiguration actor: it applies topology changes to the mesh actor one
// at a time. Manual nodes with a store publish their descriptor too (Spots
// and descriptor-based manual endpoints look it up); a manual node with an
// object role and manual endpoints runs discovery only to match its
// endpoints with descriptors.
//
// Actor tree of a node: mesh:<MeshName> → peers (peer:<RID>#n), direct,
// channel:<name>…, discovery.
//
// It must not touch another package's state: the Location Store is used
// through the location.Store interface only, the wire format is wire/'s,
// and actors are spawned through actors/.
package routemesh
