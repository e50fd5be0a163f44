package routemesh

import (
	"errors"

	"github.com/zlink-go/zlink/wire"
)

// maxRejectDetail bounds the detail of a Reject built from a decode error.
const maxRejectDetail = 200

// undecodableReject is the Reject that answers a handshake frame that does
// not decode: version for another protocol version or an unknown frame
// type (a *wire.VersionError), protocol for anything else (wrong field
// count, an identity that breaks a rule, trailing bytes, …). It is sent
// before the connection closes; after the handshake an undecodable frame
// closes the connection without one.
func undecodableReject(err error) []byte {
	reason := wire.RejectProtocol
	if errors.Is(err, wire.ErrVersion) {
		reason = wire.RejectVersion
	}
	detail := err.Error()
	if len(detail) > maxRejectDetail {
		detail = detail[:maxRejectDetail]
	}
	b, _ := wire.AppendFrame(nil, &wire.Frame{Type: wire.FrameReject, Reject: &wire.Reject{Reason: reason, Detail: detail}})
	return b
}
