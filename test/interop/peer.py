"""A ZLink peer written from docs/wire-protocol.md alone, on libzmq
(Debian's python3-zmq) and msgpack (python3-msgpack). The Go tests in this
directory run it with /usr/bin/python3:

    peer.py SCENARIO JSON-ARGS

Every scenario prints "ok <what>" lines as it goes and exits 0, or prints
"FAIL <why>" and exits 1. Scenarios that wait for the Go side print
"endpoint <tcp://...>" or "ready" and read nothing from stdin: the Go test
kills them when done.
"""

import hashlib
import hmac
import json
import os
import struct
import sys
import time

import msgpack
import zmq
from zmq.utils.monitor import recv_monitor_message

# --- docs/wire-protocol.md §2, §4 -------------------------------------------

PROTOCOL = 1
HELLO, WELCOME, AUTH, REJECT, BATCH = 1, 2, 3, 4, 5
REQUEST, SEND, REPLY, ERROR, HEARTBEAT, WEIGHT_UPDATE, DRAIN, GOODBYE = range(1, 9)
REJECT_NAMES = {1: "wrong_mesh", 2: "wrong_rid", 3: "auth", 4: "version", 5: "capability",
                6: "rid_collision", 7: "not_required", 8: "duplicate", 9: "stale_generation",
                10: "shutting_down", 11: "protocol"}
OBJECT_NONE = 1
RECV_LIMIT = 16 << 20


class Fail(Exception):
    pass


def ok(what):
    print("ok " + what, flush=True)


def pack(v):
    return msgpack.packb(v, use_bin_type=True)


def unpack(b):
    return msgpack.unpackb(b, raw=False, strict_map_key=False)


def frame(ftype, body, version=PROTOCOL):
    return pack([version, ftype, body])


def envelope(kind, corr=0, channel="", packet="", timeout_ms=0, payload=None, code=0,
             headroom=None, generation=0, revision=0, servers=None, draining=False, seq=0):
    """An envelope array with its trailing zero fields left out (§4)."""
    f = [kind, corr, channel, packet, timeout_ms, payload, code, headroom, generation,
         revision, servers, draining, seq]
    while len(f) > 1 and f[-1] in (0, "", None, False):
        f.pop()
    return f


# --- §5: trust -----------------------------------------------------------------

def security_identity(profile, secret):
    if not secret:
        return "none:anonymous"
    fp = hashlib.sha256(b"zlink-key-fingerprint" + secret).digest()[:8]
    return profile + ":" + fp.hex()


def lp(b):
    if isinstance(b, str):
        b = b.encode()
    return struct.pack(">I", len(b)) + b


def proof(secret, role, prover_nonce, verifier_nonce, transcript):
    msg = lp("zlink-proof-v1") + lp(role) + lp(prover_nonce) + lp(verifier_nonce)
    for t in transcript:
        msg += lp(t)
    return hmac.new(secret or b"", msg, hashlib.sha256).digest()


def transcript(hello, welcome):
    """§5: eleven strings from the Hello's and the Welcome's bodies."""
    h, w = hello[0], welcome[0]
    return [h[0], h[1], str(h[2]), h[6], hello[2], str(h[8]),
            w[0], w[1], str(w[2]), w[6], str(w[8])]


# --- the peer ------------------------------------------------------------------

class Peer:
    """One ZLink pipe over one libzmq socket: a DEALER (or a ROUTER that
    dialed, addressing the node's ZMTP routing id) or, listening, a ROUTER
    that answers one dialer."""

    monitors = 0

    def __init__(self, args, sock_type=zmq.DEALER, routing_id=None, route=None, heartbeat_ivl=0,
                 heartbeat_timeout=0):
        self.args = args
        self.ctx = zmq.Context.instance()
        self.sock = self.ctx.socket(sock_type)
        self.sock.setsockopt(zmq.LINGER, 500)
        if routing_id is not None:
            self.sock.setsockopt(zmq.ROUTING_ID, routing_id)
        if heartbeat_ivl:
            self.sock.setsockopt(zmq.HEARTBEAT_IVL, heartbeat_ivl)
            self.sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, heartbeat_timeout or 4 * heartbeat_ivl)
        # A monitor address of its own: pyzmq's default one is reused by a
        # socket made after another closed.
        Peer.monitors += 1
        addr = "inproc://peer-monitor-%d" % Peer.monitors
        self.sock.monitor(addr, zmq.EVENT_ALL)
        self.mon = self.ctx.socket(zmq.PAIR)
        self.mon.connect(addr)
        self.route = route  # ROUTER: the peer's routing id
        self.secret = args.get("secret", "").encode()
        self.profile = args.get("profile", "shared")
        self.rid = args.get("rid", "py")
        self.mesh = args.get("mesh", "interop")
        self.gen = int.from_bytes(os.urandom(8), "big") | 1
        self.ready = False
        self.seq = 0
        self.pending = {}  # corr → reply envelope (or None while waiting)
        self.events = []

    def identity(self, **over):
        ident = [self.mesh, self.rid, self.gen, 1, OBJECT_NONE, None,
                 security_identity(self.profile, self.secret), "", PROTOCOL, ["batch-v1"],
                 RECV_LIMIT, False]
        for k, v in over.items():
            ident[IDENTITY_FIELDS.index(k)] = v
        return ident

    def connect(self, endpoint):
        self.sock.connect(endpoint)

    def send_raw(self, b):
        if self.route is not None:
            self.sock.send_multipart([self.route, b])
        else:
            self.sock.send(b)

    def recv_raw(self, timeout):
        if not self.sock.poll(int(timeout * 1000)):
            return None
        parts = self.sock.recv_multipart()
        if self.route is not None or self.sock.type == zmq.ROUTER:
            self.route = parts[0]
            parts = parts[1:]
        if len(parts) != 1:
            raise Fail("a message of %d frames" % len(parts))
        return parts[0]

    def recv_frame(self, timeout=5.0, done=None):
        """The next frame that is not a heartbeat of a ready pipe (answered)
        nor a reply to a call; None once done() holds."""
        deadline = time.monotonic() + timeout
        while True:
            if done is not None and done():
                return None
            left = deadline - time.monotonic()
            b = self.recv_raw(max(left, 0))
            if b is None:
                raise Fail("no frame within %.1fs" % timeout)
            f = unpack(b)
            if f[0] != PROTOCOL:
                raise Fail("frame version %r" % f[0])
            if f[1] == BATCH and self.ready:
                rest = []
                for env in f[2]:
                    if not self.on_envelope(env):
                        rest.append(env)
                if not rest:
                    continue
                f = [f[0], f[1], rest]
            return f

    def on_envelope(self, env):
        """Handles heartbeats and replies; False for anything else."""
        kind = env[0]
        if kind == HEARTBEAT:
            # §heartbeats: one heartbeat back for each one received.
            self.seq += 1
            self.send_batch([envelope(HEARTBEAT, generation=self.gen, revision=1, seq=self.seq)])
            return True
        if kind in (REPLY, ERROR) and env[1] in self.pending:
            self.pending[env[1]] = env
            return True
        if kind == REQUEST and len(env) > 2 and env[2] == "":
            self.answer(env)
            return True
        return False

    def answer(self, env):
        packet = env[3]
        payload = env[5] if len(env) > 5 else None
        if packet == "echo":
            self.send_batch([envelope(REPLY, corr=env[1], payload=b"py:" + (payload or b""))])
        else:
            self.send_batch([envelope(ERROR, corr=env[1], payload=b"unknown packet " + packet.encode(), code=11)])

    def send_batch(self, envs):
        self.send_raw(frame(BATCH, envs))

    def expect_reject(self, reason, timeout=5.0):
        f = getattr(self, "rejected", None) or self.recv_frame(timeout)
        if f[1] != REJECT:
            raise Fail("got frame type %d, want Reject(%s)" % (f[1], reason))
        got = REJECT_NAMES.get(f[2][0], f[2][0])
        if got != reason:
            raise Fail("Reject(%s) %r, want Reject(%s)" % (got, f[2][1], reason))
        return f[2][1]

    def monitor_events(self, timeout):
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not self.mon.poll(int(left * 1000)):
                return self.events
            self.events.append(recv_monitor_message(self.mon))

    def wait_event(self, event, timeout=5.0):
        deadline = time.monotonic() + timeout
        while True:
            for e in self.events:
                if e["event"] == event:
                    return e
            left = deadline - time.monotonic()
            if left <= 0:
                raise Fail("no socket event %d within %.1fs; saw %s" % (
                    event, timeout, [(e["event"], e["value"]) for e in self.events]))
            if self.mon.poll(int(left * 1000)):
                self.events.append(recv_monitor_message(self.mon))

    def close(self, linger=500):
        # The monitor first: libzmq may hold a closed socket's connection
        # open while it has monitor events to deliver.
        self.sock.disable_monitor()
        self.mon.close(linger=0)
        self.sock.close(linger=linger)

    # --- the handshake as dialer (§3) ---

    def dial_handshake(self, expect_rid="", config_gen=0, over=None, verify=True):
        """Hello, Welcome, Auth; None once ready, else the Reject frame.
        over: identity fields to state instead ("secret": the key the
        proofs use); verify=False skips checking the listener's proof."""
        over = dict(over or {})
        secret = over.pop("secret", self.secret)
        if "rid" in over:
            self.rid = over["rid"]
        self.my_nonce = os.urandom(16)
        self.hello = [self.identity(**over), self.my_nonce, expect_rid, config_gen]
        self.send_raw(frame(HELLO, self.hello))
        f = self.recv_frame()
        if f[1] == REJECT:
            return f
        if f[1] != WELCOME:
            raise Fail("answer to Hello: frame type %d" % f[1])
        welcome = f[2]
        self.remote = welcome[0]
        t = transcript(self.hello, welcome)
        want = proof(secret, "listener", welcome[1], self.my_nonce, t)
        if verify and not hmac.compare_digest(want, welcome[2]):
            raise Fail("the listener's proof does not verify")
        self.send_raw(frame(AUTH, [proof(secret, "dialer", self.my_nonce, welcome[1], t)]))
        # The arbiter (smaller RID, byte order) declares ready first.
        node_arbiter = self.remote[1].encode() < self.rid.encode()
        f = self.recv_frame()
        if f[1] == REJECT:
            return f
        if f[1] != BATCH:
            raise Fail("answer to Auth: frame type %d" % f[1])
        self.ready = True
        if not node_arbiter:
            # Our ready announcement: a first Batch (a heartbeat).
            self.seq += 1
            self.send_batch([envelope(HEARTBEAT, generation=self.gen, revision=1, seq=self.seq)])
        for env in f[2]:
            self.on_envelope(env)
        return None

    # --- calls ---

    def call_many(self, channel, packet, payloads, timeout=10.0):
        base = int.from_bytes(os.urandom(4), "big") << 16
        corrs = []
        envs = []
        for i, p in enumerate(payloads):
            corr = base + i + 1
            self.pending[corr] = None
            corrs.append(corr)
            envs.append(envelope(REQUEST, corr=corr, channel=channel, packet=packet,
                                 timeout_ms=int(timeout * 1000), payload=p))
        for i in range(0, len(envs), 100):  # batches of 100 envelopes
            self.send_batch(envs[i:i + 100])
        deadline = time.monotonic() + timeout
        f = self.recv_frame(max(deadline - time.monotonic(), 0.01),
                            done=lambda: all(self.pending[c] is not None for c in corrs))
        if f is not None:
            raise Fail("unexpected frame during calls: %r" % (f,))
        return [self.pending.pop(c) for c in corrs]

    def call(self, channel, packet, payload, timeout=10.0):
        return self.call_many(channel, packet, [payload], timeout)[0]

    def goodbye(self):
        self.send_batch([envelope(GOODBYE)])


IDENTITY_FIELDS = ["mesh", "rid", "generation", "revision", "objectRole", "servers",
                   "securityIdentity", "endpoint", "protocol", "capabilities", "recvLimit",
                   "draining"]


def reply_payload(env, want):
    if env[0] != REPLY:
        raise Fail("got %r, want a Reply" % (env,))
    if env[5] != want:
        raise Fail("reply payload %r, want %r" % (env[5], want))


def serve_calls(p):
    """The calls every handshake scenario makes once ready."""
    reply_payload(p.call("echo", "echo", b"hi"), b"echo:hi")
    ok("channel request")
    payloads = [b"%d" % i for i in range(1000)]
    replies = p.call_many("echo", "echo", payloads, timeout=20.0)
    for pl, env in zip(payloads, replies):
        reply_payload(env, b"echo:" + pl)
    ok("1000 pipelined requests matched by correlation")
    reply_payload(p.call("", "whoami", b""), b"node")
    ok("node direct")
    err = p.call("", "nope", b"")
    if err[0] != ERROR or err[6] != 11:
        raise Fail("unknown packet: %r, want Error(unknown_packet=11)" % (err,))
    ok("unknown packet is Error(unknown_packet)")


# --- scenarios -------------------------------------------------------------------

def sc_handshake(args):
    """A DEALER (or a ROUTER) dials the node, handshakes and calls."""
    if args.get("router"):
        p = Peer(args, zmq.ROUTER, routing_id=b"py-router", route=args["node_zmtp_id"].encode())
        # A ROUTER learns the node's routing id from its READY: wait for the
        # connection before the first send (ROUTER drops unroutable ones).
        p.connect(args["endpoint"])
        p.wait_event(zmq.EVENT_HANDSHAKE_SUCCEEDED)
    else:
        p = Peer(args, routing_id=args.get("zmtp_id", "").encode() or None)
        p.connect(args["endpoint"])
    rej = p.dial_handshake(expect_rid="node")
    if rej is not None:
        raise Fail("handshake refused: %r" % (rej,))
    ok("handshake (trust %s)" % security_identity(p.profile, p.secret))
    serve_calls(p)
    p.goodbye()
    p.close()


def sc_idle(args):
    """Ready, then idle for args.idle seconds (heartbeats only, libzmq's
    ZMTP heartbeats on: PING every 100 ms, connection lost after 450 ms
    without traffic), then a call."""
    # The timeout is below the node's heartbeat interval (500 ms): only the
    # PONGs keep the connection.
    p = Peer(args, routing_id=b"py-idle", heartbeat_ivl=100, heartbeat_timeout=450)
    p.connect(args["endpoint"])
    rej = p.dial_handshake()
    if rej is not None:
        raise Fail("handshake refused: %r" % (rej,))
    print("ready", flush=True)
    end = time.monotonic() + args["idle"]
    while time.monotonic() < end:
        try:
            f = p.recv_frame(max(end - time.monotonic(), 0.01))
            raise Fail("unexpected frame while idle: %r" % (f,))
        except Fail as e:
            if not str(e).startswith("no frame"):
                raise
    for e in p.monitor_events(0.01):
        if e["event"] in (zmq.EVENT_DISCONNECTED, zmq.EVENT_CLOSED):
            raise Fail("the connection dropped while idle: %r" % (e,))
    reply_payload(p.call("echo", "echo", b"after"), b"echo:after")
    ok("still ready after %ds idle with ZMTP heartbeats" % args["idle"])
    p.goodbye()
    p.close()


def violation(args, name, when, bad, expect):
    """One protocol violation on a fresh connection and its documented
    answer. when: "first" sends bad(p) as the first frame; "auth" runs the
    handshake stating the identity fields bad returns (checked once the
    proofs are); "ready" runs bad(p) on a ready pipe. expect: a Reject
    reason (then the close), or "close" (the connection closes, no Reject)."""
    # A RID of its own: a new generation of a RID whose last connection the
    # node has not dropped yet would be refused stale_generation (§3).
    rid = "py-" + name.replace(" ", "-")
    p = Peer(dict(args, rid=rid), routing_id=rid.encode())
    p.connect(args["endpoint"])
    try:
        if when == "first":
            p.send_raw(bad(p))
        elif when == "auth":
            rej = p.dial_handshake(over=bad(p), verify=False)
            if rej is None:
                raise Fail(name + ": handshake succeeded")
            p.rejected = rej
        else:
            if p.dial_handshake() is not None:
                raise Fail(name + ": handshake refused")
            bad(p)
        detail = ""
        if expect != "close":
            detail = " (%s)" % p.expect_reject(expect)
        p.wait_event(zmq.EVENT_DISCONNECTED)
        ok("%s: %s%s" % (name, "Reject(%s), then closed" % expect if expect != "close" else "closed", detail))
    finally:
        p.close()


def sc_violations(args):
    def hello(p, ident=None, nonce=None, expect_rid="", extra=None, version=PROTOCOL, ftype=HELLO):
        body = [ident if ident is not None else p.identity(), nonce if nonce is not None else os.urandom(16),
                expect_rid, 0]
        if extra is not None:
            body.append(extra)
        return frame(ftype, body, version=version)

    cases = [
        ("version", "first", lambda p: hello(p, version=2), "version"),
        ("frame type", "first", lambda p: hello(p, ftype=9), "version"),
        ("identity protocol", "first", lambda p: hello(p, ident=p.identity(protocol=2)), "version"),
        ("wrong mesh", "first", lambda p: hello(p, ident=p.identity(mesh="other")), "wrong_mesh"),
        ("expectRID", "first", lambda p: hello(p, expect_rid="somebody-else"), "wrong_rid"),
        ("generation 0", "first", lambda p: hello(p, ident=p.identity(generation=0)), "protocol"),
        ("revision 0", "first", lambda p: hello(p, ident=p.identity(revision=0)), "protocol"),
        ("security identity = RID", "first", lambda p: hello(p, ident=p.identity(securityIdentity=p.rid)), "protocol"),
        ("identity field count", "first", lambda p: hello(p, ident=p.identity()[:11]), "protocol"),
        ("Hello field count", "first", lambda p: hello(p, extra="x"), "protocol"),
        ("short nonce", "first", lambda p: hello(p, nonce=os.urandom(15)), "protocol"),
        ("trailing bytes", "first", lambda p: hello(p) + b"\xc0", "protocol"),
        ("first frame not a Hello", "first", lambda p: frame(BATCH, [envelope(HEARTBEAT)]), "protocol"),
        ("not msgpack", "first", lambda p: b"\xc1", "protocol"),
        ("rid collision", "auth", lambda p: {"rid": "node"}, "rid_collision"),
        ("no batch-v1", "auth", lambda p: {"capabilities": None}, "capability"),
        ("wrong secret", "auth", lambda p: {"secret": b"not-the-secret"}, "auth"),
        ("other security identity", "auth", lambda p: {"securityIdentity": "shared:0000000000000000"}, "auth"),
        ("unknown envelope kind", "ready", lambda p: p.send_batch([[99]]), "close"),
        ("envelope of 15 fields", "ready", lambda p: p.send_batch([[HEARTBEAT] + [0] * 14]), "close"),
        ("frame over RecvLimit", "ready", lambda p: p.send_raw(b"\x00" * (p.remote[10] + 1)), "close"),
    ]
    for name, when, bad, expect in cases:
        violation(args, name, when, bad, expect)

    # The stated receive limit is the enforced one: a frame of exactly
    # RecvLimit bytes is read (and answered), one byte more closes.
    p = Peer(dict(args, rid="py-limit"), routing_id=b"py-limit")
    p.connect(args["endpoint"])
    try:
        rej = p.dial_handshake()
        if rej is not None:
            raise Fail("limit: handshake refused: %r" % (rej,))
        limit = p.remote[10]
        if limit != args["recv_limit"]:
            raise Fail("stated RecvLimit %d, want %d" % (limit, args["recv_limit"]))
        def req(n):
            return frame(BATCH, [envelope(REQUEST, corr=1, channel="echo", packet="echo",
                                          timeout_ms=5000, payload=b"\0" * n)])
        n = limit - (len(req(70000)) - 70000)
        big = req(n)
        if len(big) != limit:
            raise Fail("built %d bytes, want %d" % (len(big), limit))
        p.pending[1] = None
        p.send_raw(big)
        if p.recv_frame(20.0, done=lambda: p.pending[1] is not None) is not None:
            raise Fail("limit: unexpected frame")
        ok("a frame of exactly RecvLimit (%d bytes) is read: answered %s" % (
            limit, "Reply" if p.pending[1][0] == REPLY else "Error(%d)" % p.pending[1][6]))
    finally:
        p.close()


def sc_duplicate(args):
    """A second connection with a live connection's routing id is refused
    with a ZMTP ERROR ("300"): libzmq reports a failed handshake (auth,
    status 300); the first connection is untouched."""
    first = Peer(args, routing_id=b"py-twin")
    first.connect(args["endpoint"])
    if first.dial_handshake() is not None:
        raise Fail("first twin refused")
    second = Peer(args, routing_id=b"py-twin")
    second.sock.setsockopt(zmq.RECONNECT_IVL, 10000)
    second.connect(args["endpoint"])
    e = second.wait_event(zmq.EVENT_HANDSHAKE_FAILED_AUTH)
    if e["value"] != 300:
        raise Fail("handshake failure status %r, want 300" % e["value"])
    ok("a second connection with a live routing id: ERROR 300, handshake failed")
    reply_payload(first.call("echo", "echo", b"one"), b"echo:one")
    ok("the first connection is untouched")
    second.close()
    first.goodbye()
    first.close()


def sc_reconnect(args):
    """A peer that closes its connection and dials again at once with the
    same routing id (as a libzmq socket does when it reconnects) gets a
    new pipe: its new Hello is answered."""
    for i in range(args.get("rounds", 5)):
        p = Peer(args, routing_id=b"py-again")
        p.connect(args["endpoint"])
        try:
            rej = p.dial_handshake()
        except Fail as e:
            raise Fail("round %d: %s; socket events %s" % (i, e, [(ev["event"], ev["value"]) for ev in p.monitor_events(0.2)]))
        if rej is not None:
            raise Fail("round %d refused: %r" % (i, rej))
        reply_payload(p.call("echo", "echo", b"%d" % i), b"echo:%d" % i)
        if i % 2 == 0:
            p.goodbye()
        p.close(linger=0)
    ok("the same routing id dialed again at once, %d times" % args.get("rounds", 5))


def sc_anonymous(args):
    """Two DEALERs without a routing id: each gets a generated one."""
    peers = []
    for i in range(2):
        p = Peer(dict(args, rid="py-anon-%d" % i))
        p.connect(args["endpoint"])
        if p.dial_handshake() is not None:
            raise Fail("anonymous peer %d refused" % i)
        peers.append(p)
    for i, p in enumerate(peers):
        reply_payload(p.call("echo", "echo", b"%d" % i), b"echo:%d" % i)
    ok("two peers without a routing id, each answered")
    for p in peers:
        p.goodbye()
        p.close()


def sc_listen(args):
    """A libzmq ROUTER listens; the node dials it and handshakes (the
    Python side is the listener), then calls it node direct."""
    p = Peer(dict(args, rid=args.get("rid", "pyl")), zmq.ROUTER, routing_id=b"py-listener")
    port = p.sock.bind_to_random_port("tcp://127.0.0.1")
    print("endpoint tcp://127.0.0.1:%d" % port, flush=True)
    f = p.recv_frame(10.0)
    if f[1] != HELLO:
        raise Fail("first frame type %d, want Hello" % f[1])
    hello = f[2]
    if hello[2] not in ("", p.rid):
        raise Fail("expectRID %r" % hello[2])
    my_nonce = os.urandom(16)
    ident = p.identity()
    welcome = [ident, my_nonce, b""]
    t = transcript(hello, welcome)
    welcome[2] = proof(p.secret, "listener", my_nonce, hello[1], t)
    p.send_raw(frame(WELCOME, welcome))
    f = p.recv_frame()
    if f[1] != AUTH:
        raise Fail("answer to Welcome: frame type %d" % f[1])
    if not hmac.compare_digest(f[2][0], proof(p.secret, "dialer", hello[1], my_nonce, t)):
        raise Fail("the dialer's proof does not verify")
    # The listener's first Batch always answers a valid Auth.
    p.seq += 1
    p.send_batch([envelope(HEARTBEAT, generation=p.gen, revision=1, seq=p.seq)])
    node_arbiter = hello[0][1].encode() < p.rid.encode()
    if node_arbiter:
        f = p.recv_frame()  # the arbiter's ready: a Batch
        if f[1] != BATCH:
            raise Fail("want the dialer's ready Batch, got type %d" % f[1])
        p.ready = True
        for env in f[2]:
            p.on_envelope(env)
    else:
        p.ready = True
    ok("handshake as listener with %s" % hello[0][1])
    print("ready", flush=True)
    served = 0
    end = time.monotonic() + 20
    while time.monotonic() < end:
        try:
            f = p.recv_frame(0.5)
        except Fail:
            continue
        for env in f[2]:
            if env[0] == GOODBYE:
                ok("goodbye")
                return
        raise Fail("unexpected %r" % (f,))


def sc_sub(args):
    """A libzmq SUB dials a ZLink publisher and receives one message."""
    ctx = zmq.Context.instance()
    s = ctx.socket(zmq.SUB)
    s.setsockopt(zmq.SUBSCRIBE, args["topic"].encode())
    s.connect(args["endpoint"])
    print("ready", flush=True)
    if not s.poll(15000):
        raise Fail("no message within 15s")
    parts = s.recv_multipart()
    if parts[0] != args["topic"].encode() or len(parts) != 2:
        raise Fail("got %r" % parts)
    ok("sub got %s" % parts[1].decode())
    s.close(linger=0)


def sc_pub(args):
    """A libzmq PUB listens and publishes [topic, payload] until killed."""
    ctx = zmq.Context.instance()
    s = ctx.socket(zmq.PUB)
    port = s.bind_to_random_port("tcp://127.0.0.1")
    print("endpoint tcp://127.0.0.1:%d" % port, flush=True)
    end = time.monotonic() + 30
    i = 0
    while time.monotonic() < end:
        s.send_multipart([args["topic"].encode(), b"libzmq-%d" % i])
        i += 1
        time.sleep(0.02)


def sc_hex(args):
    """Decodes the example exchange of docs/wire-protocol.md (hex) and
    checks it against this peer's own encoding and proofs."""
    ex = args["example"]
    for name, h in ex["frames"].items():
        f = unpack(bytes.fromhex(h))
        if pack(f) != bytes.fromhex(h):
            raise Fail("%s: msgpack re-encodes differently" % name)
    hello = unpack(bytes.fromhex(ex["frames"]["hello"]))[2]
    welcome = unpack(bytes.fromhex(ex["frames"]["welcome"]))[2]
    auth = unpack(bytes.fromhex(ex["frames"]["auth"]))[2]
    secret = ex["secret"].encode()
    t = transcript(hello, welcome)
    if proof(secret, "listener", welcome[1], hello[1], t) != welcome[2]:
        raise Fail("the example's Welcome proof does not verify")
    if proof(secret, "dialer", hello[1], welcome[1], t) != auth[0]:
        raise Fail("the example's Auth proof does not verify")
    if hello[0][6] != security_identity("shared", secret):
        raise Fail("security identity %r" % hello[0][6])
    ok("example handshake verifies")
    req = unpack(bytes.fromhex(ex["frames"]["spot_request"]))[2][0]
    pl = req[5]
    kind, off = read_spot_string(pl, 3)
    sid, off = read_spot_string(pl, off)
    packet, off = read_spot_string(pl, off)
    chain, off = read_uvarint(pl, off)
    if (req[:5] != [REQUEST, 1, "", SPOT_PACKET, 5000] or pl[:3] != bytes([1, SPOT_VIA, 0])
            or (kind, sid, packet, chain) != ("counter", "c1", "add", 0) or unpack(pl[off:]) != 2):
        raise Fail("spot request %r" % (req,))
    rep = unpack(bytes.fromhex(ex["frames"]["spot_reply"]))[2][0]
    status, fields = spot_reply(rep[5])
    if rep[:2] != [REPLY, 1] or status != "ok" or fields[:2] != ("", 1) or unpack(fields[2]) != 2:
        raise Fail("spot reply %r: %s %r" % (rep, status, fields))
    ok("example spot frames decode")


# --- §10: Spots from a wire-only peer -------------------------------------------

SPOT_PACKET = "zlink.spot"
SPOT_VIA = 1  # flags bit 0: the receiving Object Server routes the call


def uvarint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def read_uvarint(b, off):
    n, shift = 0, 0
    while True:
        x = b[off]
        off += 1
        n |= (x & 0x7F) << shift
        if x < 0x80:
            return n, off
        shift += 7


def spot_string(s):
    s = s.encode()
    return uvarint(len(s)) + s


def read_spot_string(b, off):
    n, off = read_uvarint(b, off)
    return b[off:off + n].decode(), off + n


def spot_request(kind, sid, packet, body, flags=SPOT_VIA):
    return (bytes([1, flags, 0]) + spot_string(kind) + spot_string(sid) + spot_string(packet)
            + uvarint(0) + body)


def spot_reply(b):
    """(status name, fields) of a Spot reply payload."""
    st = b[0]
    if st == 0:
        owner, off = read_spot_string(b, 1)
        epoch, off = read_uvarint(b, off)
        return "ok", (owner, epoch, b[off:])
    if st == 1:
        owner, off = read_spot_string(b, 1)
        epoch, off = read_uvarint(b, off)
        return "redirect", (owner, epoch)
    if st == 2:
        reason, _ = read_spot_string(b, 1)
        return "retry", (reason,)
    code, off = read_uvarint(b, 1)
    msg, off = read_spot_string(b, off)
    return "error", (code, msg)


def sc_spot(args):
    """Calls Spot counter/<id> through a known Object Server (CallVia)."""
    p = Peer(args, routing_id=b"py-spot")
    p.connect(args["endpoint"])
    rej = p.dial_handshake()
    if rej is not None:
        raise Fail("handshake refused: %r" % (rej,))
    want = 0
    for add in (2, 3):
        want += add
        end = time.monotonic() + 15
        while True:
            env = p.call("", SPOT_PACKET, spot_request(args["kind"], args["id"], "add", pack(add)))
            if env[0] != REPLY:
                raise Fail("spot call: %r" % (env,))
            status, fields = spot_reply(env[5])
            if status == "retry" and time.monotonic() < end:
                time.sleep(0.1)
                continue
            if status != "ok":
                raise Fail("spot call: %s %r" % (status, fields))
            break
        owner, epoch, body = fields
        if unpack(body) != want:
            raise Fail("counter = %r, want %d" % (unpack(body), want))
    ok("spot %s/%s = %d (owner %r, epoch %d)" % (args["kind"], args["id"], want, owner or "the replier", epoch))
    p.goodbye()
    p.close()


SCENARIOS = {
    "spot": sc_spot,
    "handshake": sc_handshake, "idle": sc_idle, "violations": sc_violations,
    "duplicate": sc_duplicate, "anonymous": sc_anonymous, "reconnect": sc_reconnect, "listen": sc_listen,
    "sub": sc_sub, "pub": sc_pub, "hex": sc_hex,
}


def main():
    scenario, args = sys.argv[1], json.loads(sys.argv[2])
    try:
        SCENARIOS[scenario](args)
    except Fail as e:
        print("FAIL " + str(e), flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
