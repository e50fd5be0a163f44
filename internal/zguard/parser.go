package zguard

import (
	"encoding/binary"
	"fmt"
)

// ZMTP 3 framing constants.
const (
	greetingLen       = 64
	signatureLen      = 10 // the greeting's signature: 0xFF, 8 bytes, 0x7F
	flagMore          = 0x01
	flagLong          = 0x02
	flagCommand       = 0x04
	sigHeader         = 0xFF
	sigFooter         = 0x7F
	sigFooterAt       = 9
	maxHeaderLen      = 9
	handshakeCmdLimit = 64 << 10 // largest handshake command accepted
)

// parseState is where a frameParser is in the ZMTP byte stream.
type parseState uint8

const (
	stateGreeting parseState = 1 + iota // inside the 64-byte greeting
	stateFlags                          // expecting a frame's flags byte
	stateLength                         // inside a frame's length field
	stateBody                           // inside a frame's body
	stateFailed                         // a limit was broken; terminal
)

func (s parseState) String() string {
	switch s {
	case stateGreeting:
		return "greeting"
	case stateFlags:
		return "flags"
	case stateLength:
		return "length"
	case stateBody:
		return "body"
	case stateFailed:
		return "failed"
	}
	return fmt.Sprintf("parseState(%d)", uint8(s))
}

// parseEvent is what a call to frameParser.next completed.
type parseEvent uint8

const (
	eventNone     parseEvent = 1 + iota // all input consumed, nothing completed
	eventGreeting                       // the greeting is complete
	eventFrame                          // a frame (header and body) is complete
)

func (e parseEvent) String() string {
	switch e {
	case eventNone:
		return "none"
	case eventGreeting:
		return "greeting"
	case eventFrame:
		return "frame"
	}
	return fmt.Sprintf("parseEvent(%d)", uint8(e))
}

// frameParser follows a ZMTP 3 byte stream (greeting, then frames) one chunk
// at a time, however the stream is split. It does no I/O and allocates only
// for captured command bodies, which are bounded by cmdLimit.
type frameParser struct {
	limit    uint64 // largest frame body accepted
	cmdLimit uint64 // largest command body accepted while capture is on
	capture  bool   // keep the bodies of command frames in body

	state parseState
	need  int    // greeting or length bytes still expected
	flags byte   // flags of the current (or last) frame
	size  uint64 // length of the current frame
	left  uint64 // body bytes of the current frame still expected
	body  []byte // captured body of the current command frame
}

func newFrameParser(limit uint64) frameParser {
	return frameParser{limit: limit, cmdLimit: limit, state: stateGreeting, need: greetingLen}
}

// withCapture turns on capture of command bodies of up to cmdLimit bytes
// (bounded by limit).
func (p *frameParser) withCapture(cmdLimit uint64) {
	p.capture = true
	p.cmdLimit = min(cmdLimit, p.limit)
}

// atHeader reports whether the next byte starts a frame header.
func (p *frameParser) atHeader() bool { return p.state == stateFlags }

// more and command describe the last frame whose header was read.
func (p *frameParser) more() bool    { return p.flags&flagMore != 0 }
func (p *frameParser) command() bool { return p.flags&flagCommand != 0 }

// headerLen is the length of the header starting with flags.
func headerLen(flags byte) int {
	if flags&flagLong != 0 {
		return maxHeaderLen
	}
	return 2
}

// next consumes b up to the end of the first unit it completes and returns
// how many bytes it consumed and what completed. After an error the parser
// is failed and every call returns the same error.
func (p *frameParser) next(b []byte) (int, parseEvent, error) {
	n := 0
	for n < len(b) {
		switch p.state {
		case stateGreeting:
			k := min(p.need, len(b)-n)
			n += k
			p.need -= k
			if p.need == 0 {
				p.state = stateFlags
				return n, eventGreeting, nil
			}
		case stateFlags:
			p.flags = b[n]
			n++
			p.need = headerLen(p.flags) - 1
			p.size = 0
			p.state = stateLength
		case stateLength:
			p.size = p.size<<8 | uint64(b[n])
			n++
			p.need--
			if p.need > 0 {
				continue
			}
			if err := p.checkSize(); err != nil {
				return n, eventNone, err
			}
			p.left = p.size
			p.body = p.body[:0]
			if p.left == 0 {
				p.state = stateFlags
				return n, eventFrame, nil
			}
			p.state = stateBody
		case stateBody:
			k := int(min(p.left, uint64(len(b)-n)))
			if p.capture && p.command() {
				p.body = append(p.body, b[n:n+k]...)
			}
			n += k
			p.left -= uint64(k)
			if p.left == 0 {
				p.state = stateFlags
				return n, eventFrame, nil
			}
		case stateFailed:
			return n, eventNone, p.failure()
		default:
			panic(fmt.Sprintf("zguard: frame parser in state %v", p.state))
		}
	}
	if p.state == stateFailed {
		return n, eventNone, p.failure()
	}
	return n, eventNone, nil
}

func (p *frameParser) checkSize() error {
	lim := p.limit
	if p.capture && p.command() {
		lim = p.cmdLimit
	}
	if p.size > lim {
		p.state = stateFailed
		return p.failure()
	}
	return nil
}

func (p *frameParser) failure() error {
	lim := p.limit
	if p.capture && p.command() {
		lim = p.cmdLimit
	}
	return &FrameTooLargeError{Size: p.size, Limit: lim, Command: p.command()}
}

// validGreeting reports whether g (64 bytes) carries the ZMTP signature.
func validGreeting(g []byte) bool {
	return len(g) >= greetingLen && validSignature(g)
}

// validSignature reports whether g starts with the ZMTP 3 signature: 0xFF,
// 8 bytes of padding (libzmq writes its routing-id length + 1 there, so
// they are not checked), 0x7F.
func validSignature(g []byte) bool {
	return len(g) >= signatureLen && g[0] == sigHeader && g[sigFooterAt] == sigFooter
}

// sniffCommand decodes a command body. For READY and INITIATE (the commands
// that carry metadata) it validates the property list strictly — zmq4's own
// decoder panics on a truncated one — and returns the Identity property as
// zmq4 will read it (key title-cased to "Identity", last one wins).
func sniffCommand(body []byte) (name, identity string, err error) {
	if len(body) == 0 {
		return "", "", fmt.Errorf("%w: empty", ErrMalformedCommand)
	}
	nl := int(body[0])
	if nl > len(body)-1 {
		return "", "", fmt.Errorf("%w: name length %d", ErrMalformedCommand, nl)
	}
	name = string(body[1 : 1+nl])
	if name != "READY" && name != "INITIATE" {
		return name, "", nil
	}
	props := body[1+nl:]
	sockType, typed := "", false
	for len(props) > 0 {
		kl := int(props[0])
		props = props[1:]
		if kl > len(props) || len(props)-kl < 4 {
			return name, "", fmt.Errorf("%w: truncated property", ErrMalformedCommand)
		}
		key := props[:kl]
		props = props[kl:]
		vl := binary.BigEndian.Uint32(props)
		props = props[4:]
		if uint64(vl) > uint64(len(props)) {
			return name, "", fmt.Errorf("%w: property value length %d", ErrMalformedCommand, vl)
		}
		if isIdentityKey(key) {
			identity = string(props[:vl])
		}
		if isSocketTypeKey(key) {
			sockType, typed = string(props[:vl]), true
		}
		props = props[vl:]
	}
	if name == "READY" && (!typed || !knownSocketTypes[sockType]) {
		// zmq4 panics (in its accept or dial goroutine, taking the whole
		// process down) on a READY without a socket type it knows.
		return name, "", fmt.Errorf("%w: socket type %.16q", ErrMalformedCommand, sockType)
	}
	return name, identity, nil
}

// knownSocketTypes are the ZMTP socket types zmq4 knows.
var knownSocketTypes = map[string]bool{
	"PAIR": true, "PUB": true, "SUB": true, "REQ": true, "REP": true, "DEALER": true,
	"ROUTER": true, "PULL": true, "PUSH": true, "XPUB": true, "XSUB": true,
}

// isSocketTypeKey mirrors zmq4's title-casing (each word's first letter
// upper-cased, the rest kept): the keys it reads as "Socket-Type".
func isSocketTypeKey(k []byte) bool {
	return len(k) == 11 && (k[0] == 's' || k[0] == 'S') && string(k[1:7]) == "ocket-" &&
		(k[7] == 't' || k[7] == 'T') && string(k[8:]) == "ype"
}

// isIdentityKey mirrors zmq4, which title-cases keys without lowering the
// rest: only "identity" and "Identity" become "Identity".
func isIdentityKey(k []byte) bool {
	return len(k) == 8 && (k[0] == 'i' || k[0] == 'I') && string(k[1:]) == "dentity"
}
