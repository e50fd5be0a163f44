package spot

import (
	"encoding/binary"
	"fmt"

	"github.com/zlink-go/zlink/internal/zerr"
	"github.com/zlink-go/zlink/wire"
)

// The Spot protocol rides on Node-direct requests and sends of one packet
// name. A request payload is a header and the application body; a reply
// payload is a status and what the status carries. docs/wire-protocol.md
// has the layout.
const (
	packetSpot   = "zlink.spot"
	protoVersion = 1
	maxChain     = 32 // call-chain links carried in one request
	maxName      = 1024
)

// link is one waiting turn of a call chain: the activation and the turn
// in it. A request carries the links of every Spot turn waiting on it.
type link struct{ act, turn uint64 }

// header is a Spot request as it travels.
type header struct {
	flags  uint8 // flagRoute: the receiver makes the call on the sender's behalf
	hops   uint8
	kind   string
	id     string
	packet string
	chain  []link
	body   []byte

	// Not on the wire: the caller's state of one call.
	relist   bool // a "kind not hosted" answer came: place only after a fresh listing
	relisted bool // the call already had its fresh listing for such an answer
}

// Header flags.
const (
	// flagRoute asks the receiving node to route the call itself (a caller
	// that reaches the mesh through one Object Server, e.g. the CLI's
	// --peer).
	flagRoute = 1 << iota
	// flagHandoff marks a call the previous owner forwards during a move:
	// the new owner runs it before the calls that reached it directly.
	flagHandoff
	// flagPrepare (request): the previous owner asks the target to get
	// ready to take the Spot; the reply carries the target's lease
	// generation.
	flagPrepare
	// flagAdopt (one-way): the record now names the target; it activates
	// the Spot.
	flagAdopt
	// flagEnd (one-way): the last forwarded call of a move has been sent.
	flagEnd
	// flagAbort (one-way): the move is off.
	flagAbort
	// flagSendAsCall: a one-way message forwarded as a request, so the
	// forwarder learns when it has run (the Spot runs its send handler and
	// answers empty).
	flagSendAsCall
)

// flagsControl are the move's control messages (no application packet).
const flagsControl = flagPrepare | flagAdopt | flagEnd | flagAbort

// errMalformed is a Spot payload that does not decode.
var errMalformed = fmt.Errorf("%w: malformed spot payload", zerr.ErrBadPayload)

func (h *header) encode() []byte {
	n := 4 + len(h.kind) + len(h.id) + len(h.packet) + 3*binary.MaxVarintLen64 + len(h.chain)*2*binary.MaxVarintLen64 + binary.MaxVarintLen64 + len(h.body)
	b := make([]byte, 0, n)
	b = append(b, protoVersion, h.flags, h.hops)
	b = appendString(b, h.kind)
	b = appendString(b, h.id)
	b = appendString(b, h.packet)
	b = binary.AppendUvarint(b, uint64(len(h.chain)))
	for _, l := range h.chain {
		b = binary.AppendUvarint(b, l.act)
		b = binary.AppendUvarint(b, l.turn)
	}
	return append(b, h.body...)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) byte() byte {
	if r.err != nil || len(r.b) < 1 {
		r.err = errMalformed
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errMalformed
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) string(limit int) string {
	n := r.uvarint()
	if r.err != nil || n > uint64(limit) || n > uint64(len(r.b)) {
		r.err = errMalformed
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func decodeHeader(b []byte) (header, error) {
	r := reader{b: b}
	var h header
	if v := r.byte(); r.err == nil && v != protoVersion {
		return h, fmt.Errorf("%w: spot protocol version %d", zerr.ErrBadPayload, v)
	}
	h.flags = r.byte()
	h.hops = r.byte()
	h.kind = r.string(maxName)
	h.id = r.string(maxName)
	h.packet = r.string(maxName)
	n := r.uvarint()
	if r.err == nil && n > maxChain {
		return h, fmt.Errorf("%w: call chain of %d links", zerr.ErrBadPayload, n)
	}
	if n > 0 && r.err == nil {
		h.chain = make([]link, n)
		for i := range h.chain {
			h.chain[i] = link{act: r.uvarint(), turn: r.uvarint()}
		}
	}
	if r.err != nil {
		return h, r.err
	}
	if h.kind == "" || h.id == "" {
		return h, fmt.Errorf("%w: empty spot kind or id", zerr.ErrBadPayload)
	}
	h.body = r.b
	return h, nil
}

// Reply statuses.
const (
	stOK       = 0 // body follows
	stRedirect = 1 // owner RID and epoch follow ("" = ask placement again)
	stRetry    = 2 // not servable now (owner lease still live, own lease not ready); reason follows
	stError    = 3 // code and message follow
)

// Details an error reply may carry after its message (a reader ignores
// the bytes after the message it does not know, so older callers see
// only the code).
const (
	// detailNotHosted: the node does not host the Spot's kind (the code
	// is no_target); the caller lists the mesh again and places once more.
	detailNotHosted = 1
)

// The Spot results' codes (1000 and up in the one table of results).
const (
	codeCycle          = wire.CodeCycle
	codeFenced         = wire.CodeFenced
	codeOutcomeUnknown = wire.CodeOutcomeUnknown
)

type reply struct {
	status byte
	owner  string
	epoch  uint64
	code   wire.Code
	msg    string
	detail uint64 // of an error: detailNotHosted, or 0
	body   []byte
}

func okReply(epoch uint64, body []byte) []byte { return routedReply("", epoch, body) }

// routedReply is an OK reply that names the owner (empty: the replier).
func routedReply(owner string, epoch uint64, body []byte) []byte {
	b := make([]byte, 0, 2+len(owner)+binary.MaxVarintLen64+len(body))
	b = append(b, stOK)
	b = appendString(b, owner)
	b = binary.AppendUvarint(b, epoch)
	return append(b, body...)
}

func redirectReply(owner string, epoch uint64) []byte {
	b := []byte{stRedirect}
	b = appendString(b, owner)
	return binary.AppendUvarint(b, epoch)
}

func retryReply(reason string) []byte { return appendString([]byte{stRetry}, reason) }

func errorReply(err error) []byte {
	code := wire.CodeOf(err) // a Spot result before a RouteMesh one it wraps
	b := binary.AppendUvarint([]byte{stError}, uint64(code))
	return appendString(b, err.Error())
}

// notHostedReply answers a request for a kind this node does not host:
// error no_target with detailNotHosted. It never ran.
func notHostedReply(rid, kind string) []byte {
	b := errorReply(fmt.Errorf("%w: %w: %s does not host kind %s", ErrNoTarget, ErrUnknownKind, rid, kind))
	return binary.AppendUvarint(b, detailNotHosted)
}

func decodeReply(b []byte) (reply, error) {
	r := reader{b: b}
	var rep reply
	rep.status = r.byte()
	switch rep.status {
	case stOK:
		rep.owner = r.string(maxName)
		rep.epoch = r.uvarint()
		rep.body = r.b
	case stRedirect:
		rep.owner = r.string(maxName)
		rep.epoch = r.uvarint()
	case stRetry:
		rep.msg = r.string(1 << 16)
	case stError:
		rep.code = wire.Code(r.uvarint())
		rep.msg = r.string(1 << 20)
		if v, n := binary.Uvarint(r.b); r.err == nil && n > 0 {
			rep.detail = v // what follows it is for later versions
		}
	default:
		return rep, errMalformed
	}
	return rep, r.err
}

// err turns an error reply into the caller's error.
func (rep *reply) err() error {
	switch rep.code {
	case codeCycle:
		return spotError(ErrCycle, rep.msg)
	case codeFenced:
		return spotError(ErrFenced, rep.msg)
	case codeOutcomeUnknown:
		return spotError(ErrOutcomeUnknown, rep.msg)
	}
	return wire.ErrorOf(rep.code, rep.msg)
}
