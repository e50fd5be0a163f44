// Package fault is the fault harness of the integration tests: a TCP
// proxy of our own, placed between two nodes, that can pass traffic,
// black-hole it in both directions or in one (an asymmetric partition),
// delay it, and reset every connection — and heal again. Connections stay
// open while black-holed, as they do when a host vanishes or a switch
// drops a link, so the nodes must notice through their own liveness.
//
// It only ever listens and dials on loopback. It must not know about
// meshes: it moves bytes.
package fault
