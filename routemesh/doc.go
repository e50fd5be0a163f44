// Package routemesh is the RouteMesh runtime: one MeshNode per MeshName per
// process, its connections, channels, Node-direct calls, weights, drain
// and shutdown.
//
// # Using it
//
// Declare a typed packet once and use it on both sides; the typed helpers
// encode and decode for you:
//
//	var JoinMatch = wire.NewPacket[JoinReq, JoinResult]("JoinMatch")
//
//	routemesh.OnRequest(mesh.Channel("match").Server(), JoinMatch,
//		func(c *routemesh.Context, req JoinReq) (JoinResult, error) { ... }) // c.From called, c.RID answers
//	err := node.WaitReady(ctx, "match")                                       // bounded by ctx; no retry loop
//	res, err := routemesh.Call(ctx, node, "match", JoinMatch, req)            // one Server, picked by weight
//	err = routemesh.Send(ctx, node, "match", Notify, msg)                     // one-way, one Server
//	out, err := routemesh.CallNode(ctx, node, "match-1", WhoIs, "p1")         // one node by RID
//	results, err := routemesh.Multicast(ctx, node, "match", Ping, struct{}{}) // every eligible Server once
//
// Node.Call, Send, CallNode, SendNode and Multicast are the same verbs on
// byte slices. Node.SetWeight, Drain and Undrain change routing at run
// time; Node.Status and the host's tree show what the node sees.
//
// Actor tree of a node (every one supervised; see docs/architecture.md for
// how each rebuilds after a restart):
//
//	mesh:<MeshName>      the node's view (state, revision, weights, links,
//	                     owners), handshakes through the pure
//	                     internal/handshake and internal/admission machines,
//	                     pipes, manual and automatic connection intents
//	├── listener         owns the read loop of the node's ROUTER
//	├── lease            owns the descriptor lease loop (with a store)
//	├── discovery        the single reconfiguration actor (with a store)
//	├── direct           Node-direct handler owner (bounded mailbox)
//	├── channels         spawns one channel:<name> owner per Server channel
//	└── peer:<RID>#<n>   one per ready connection: internal/liveness,
//	    └── writer       control envelopes; the writer stands for the
//	                     pipe's writer loop
//
// Callers never go through the mesh actor: they read the node's view and
// the channel target table (internal/selection) lock-free, submit to a
// pipe's bounded writer or to an owner's bounded mailbox, and wait in the
// call table for exactly one terminal result.
//
// Sockets: the node listens, dials, reads and writes only through
// internal/transport — the guarded zmq4 transport (one ROUTER, one DEALER
// per outbound pipe) unless this package's own tests inject its in-memory
// twin, internal/transport/memnet.
//
// Tracing is off unless the node has a Tracer (MeshBuilder.SetTracer; see
// trace.go): then calls and handlers are spans and the caller's trace
// context rides the envelope to peers that read it. This package never
// imports a tracing library.
//
// With a Location Store (Deps.Store) the node publishes its descriptor
// under a TTL lease (after bind, renewed every TTL/3, republished on every
// revision change, deleted on Stop); automatic nodes find their peers
// through it, and manual nodes with an object role match their manual
// endpoints with descriptors.
//
// It must not touch another package's state: the Location Store is used
// through the location.Store interface only, the wire format is wire/'s,
// and actors are spawned through actors/.
package routemesh
