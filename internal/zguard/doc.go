// Package zguard is the guarded TCP transport that zmq4 sockets use instead
// of its plain "tcp" transport.
//
// # Why it exists
//
// go-zeromq/zmq4 v0.17.0 hands every byte of a connection to its own ZMTP
// code with no limits (each point below was measured with probe programs):
//
//   - its accept loop runs the ZMTP handshake inline with no deadline, so one
//     silent TCP connection stalls every later peer;
//   - a peer that stops reading blocks the socket-wide write mutex, so one
//     stuck peer blocks sends to every peer of the socket;
//   - a frame header announcing a huge length makes it allocate that length,
//     and the process dies with a fatal out-of-memory error;
//   - two live connections announcing the same identity both receive every
//     message a ROUTER sends to that identity;
//   - a malformed READY property list makes its metadata decoder panic, and
//     a READY without a socket type it knows (none, or "DEALE\xa8", found
//     by FuzzListenerPreHandshake) panics in its accept or dial goroutine
//     and takes the whole process down;
//   - a connection whose greeting it refuses (another mechanism, say) is
//     dropped without being closed, and stays open;
//   - each frame is two unbuffered writes.
//
// zguard registers the transport "zgtcp" (Register) whose connections fix
// these below zmq4: the listener hands zmq4 only connections whose
// handshake it can finish without waiting — it has read the peer's
// signature, sent the listener's greeting (the bytes zmq4 then writes are
// swallowed: the same 64), read the rest of the peer's greeting (libzmq
// sends it in stages, each after the listener's), and read the peer's
// READY — so zmq4's accept loop never waits on a peer; every connection keeps a read deadline
// until the peer's READY command has been read, and is closed at that
// deadline when zmq4 stopped reading it before; writes are buffered and
// flushed per complete ZMTP message with a write deadline, so a stuck
// peer fails its own connection; reads are buffered and every incoming
// frame header is checked against Config.MaxFrame before zmq4 sees its
// length; the handshake READY is validated — well-formed properties and a
// Socket-Type zmq4 knows — and its Identity property must be unique among
// the live connections of one listener: a READY claiming a held identity
// waits for it (half the handshake timeout; with direct reads a closed
// connection that delivered messages holds its identity until the owner's
// Inbound.Disconnect), then is answered with a ZMTP ERROR command (reason
// "300", ZAP's temporary error) before zmq4 sees the connection, and
// closed; an empty one gets a
// generated identity (a zero byte and a 32-bit counter, as libzmq's ROUTER
// does), the one ConnEvent and Received carry (zmq4's own ROUTER queue
// names such a peer by a UUID of its own). Beside it they carry the
// connection's key (ConnKey: the identity and the connection's number),
// which Inbound's calls take, so that an owner never takes a closed
// connection's late event for a new connection with its identity.
//
// # Before authentication
//
// A listener bounds what a stranger can hold before its handshake has
// ended (Config):
//
//   - a connection that sends nothing is closed at FirstByteTimeout;
//   - the greeting and READY must arrive within HandshakeTimeout, and
//     with SpeakFirst the first message within HandshakeTimeout after;
//   - a connection counts as pending from its accept until its handshake
//     ended: its READY, or with AwaitAuth until the socket's owner reports
//     it authenticated (Inbound.Authenticated), at most AuthTimeout;
//   - pending connections are capped in all (MaxPendingHandshakes), per
//     source address (MaxPendingPerSource), and for strangers
//     (MaxPendingHandshakes - ReservedForKnown): the reserve serves only
//     sources that completed a handshake on the listener before;
//   - a connection past a cap is closed at accept, before any buffer or
//     goroutine is spent on it, and reported (OnRejected) with a
//     *PendingLimitError.
//
// The caps are the pure pendingBook; the listener applies its decisions.
//
// Direct sends (Inbound.Send, Outbound.Send) bypass zmq4's write side after
// the handshake: the socket's owner writes one whole ZMTP message on its
// own goroutine to one peer's guarded connection, under that connection's
// write lock and deadline. zmq4 starts a goroutine per send and, on a
// ROUTER, holds one socket-wide lock for the whole write; with direct
// sends a peer that stops reading holds up only the writes to it. Reads
// are direct too: on a dialed connection the owner reads it
// (Outbound.Recv) while zmq4's reader is parked after the handshake; on a
// listener's connections (Inbound.ReadDirect) the goroutine zmq4 started
// to read each one reads its messages into one queue (Inbound.Messages),
// or hands each to the owner's function (Inbound.ReadDirectFunc),
// without zmq4's per-message allocations and re-queueing. DialDealer
// dials without a zmq4 socket at all: zmq4.Open runs the DEALER's ZMTP
// handshake on the guarded connection, which the owner then reads and
// writes directly (no goroutine of zmq4's is left behind).
//
// A connection holds its 64 KiB read and write buffers only while bytes
// move: both come from a pool, and a quiet connection waits for bytes in
// a 512-byte buffer of its own and writes small messages from another
// (buffers.go).
//
// # Use
//
//	zguard.Register()
//	ctx = zguard.WithConfig(ctx, cfg)          // per socket, optional
//	router := zmq4.NewRouter(ctx, zmq4.WithID(id))
//	ep, _ := zguard.Endpoint("tcp://127.0.0.1:0")
//	err := router.Listen(ep)
//
// The configuration travels in the socket's context: zmq4 passes the socket
// context to Transport.Listen and Transport.Dial. Only the NULL security
// mechanism is supported (zmq4's PLAIN is useless; trust is established by
// the application handshake above).
//
// # TLS
//
// With Config.TLS (NewTLS) every connection runs TLS 1.3 with mutual
// authentication below ZMTP: the listener completes the TLS handshake
// (under the handshake deadline, counted among the pending handshakes)
// before it reads the greeting, the dialer before it returns the
// connection, and the guards above then apply to the decrypted stream.
// Each side verifies the peer's certificate chain against TLSConfig.Roots
// and the identity it names (CertIdentity) against TLSConfig.PeerIdentity.
// A refusal is a *TLSError matching ErrTLS and one kind (ErrTLSPlaintext,
// ErrTLSUntrusted, ErrTLSIdentity, ErrTLSPeerRefused); the listener
// reports it through OnRejected, the dialer returns it. A plaintext
// listener refuses a TLS ClientHello with ErrTLSUnexpected, and a plaintext
// dialer whose peer answers with TLS fails with it too.
//
// # What it must not touch
//
// zguard knows ZMTP 3 framing (greeting, frame headers, the READY, ERROR,
// PING and PONG commands) and nothing above it: it knows nothing of
// RouteMesh, the wire envelope protocol, peers' application identities or
// reconnect policy. Every byte zmq4 or a direct send writes reaches the
// peer unchanged (inside TLS when configured), a direct send never starts
// inside a message zmq4 is writing (ErrMidMessage), and every byte zmq4
// or a direct read reads comes from the peer unchanged, or the connection
// is closed; a direct read consumes the ZMTP commands it meets (zmq4 would
// too). A listener writes zmq4's greeting before zmq4 does (byte for byte
// the same; zmq4's copy is dropped, and a different one fails the
// connection). What it writes of its own: a direct read answers a PING
// with a PONG carrying the PING's context (ZMTP 3.1; libzmq with
// ZMQ_HEARTBEAT_IVL drops a connection whose PINGs go unanswered), between
// two messages; a listener refuses a duplicate identity with an ERROR
// command (above); a plaintext listener answers a TLS ClientHello
// with the 10-byte ZMTP signature before closing, so the TLS side learns
// at once that it reached a plaintext port; a TLS listener answers a
// plaintext ZMTP greeting with a TLS alert record before closing, so the
// plaintext side learns it reached a TLS port. zmq4 never sees either
// connection.
package zguard
