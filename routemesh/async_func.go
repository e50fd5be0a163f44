package routemesh

import "time"

// CallNodeFunc is CallNode without waiting and without an actor: fn gets
// the call's one terminal result — the reply, or an error matching the
// sentinels a blocking call ends with (ErrTimeout included) — within
// timeout (0 = DefaultRequestTimeout). No goroutine waits for it.
//
// fn runs on whichever goroutine ends the call (the connection's reader,
// the call table's deadline sweep, a peer loss, shutdown, or the caller's
// own for an error at once), so it must return quickly and must not block
// or start a blocking call itself; hand longer work to an actor or a
// goroutine. It is what runtimes built on the mesh (Spots) use to chain
// calls without parking a goroutine per call.
func (n *Node) CallNodeFunc(rid, packet string, payload []byte, timeout time.Duration, fn func(Reply)) {
	a := &asyncCall{fn: fn}
	n.callAsync(a, "", rid, packet, payload, timeout, nil)
}
